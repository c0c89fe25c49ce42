//! Section 7, `hostile`: `GET /v1/sessions/{id}` timed alone and beside
//! 200 hostile connections (half silent, half trickling a request head),
//! which the service cuts off at its head deadline.

use std::io::{Read, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::service::Core;
use crate::stats::{ms, stats, Table};

/// How long `GET /v1/sessions/{id}` is timed in each setting: long enough
/// for the hostile crowd to be cut off at its 5 s head deadline and to come
/// back twice.
const LATENCY_WINDOW: Duration = Duration::from_secs(12);
/// The pause between two timed requests (so the window samples its whole
/// length, not a burst).
const LATENCY_GAP: Duration = Duration::from_millis(2);
/// Hostile connections held open during the loaded half: half silent (they
/// connect and send nothing), half trickling a request head a byte at a time.
const HOSTILE: usize = 200;
/// How often each trickling connection sends its next byte.
const TRICKLE: Duration = Duration::from_millis(50);

/// Holds `HOSTILE` connections open to `addr` until `stop`: the service
/// closes each once its head is overdue (5 s), and a closed one is opened
/// again at once, as an attacker would. Returns how many were opened.
fn hostile_crowd(addr: std::net::SocketAddr, stop: Arc<std::sync::atomic::AtomicBool>) -> usize {
    use std::net::TcpStream;
    let open = |trickle: bool| {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_nonblocking(true).unwrap();
        let mut s = s;
        if trickle {
            let _ = s.write_all(b"GET /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ");
        }
        s
    };
    let mut crowd: Vec<(bool, TcpStream)> = (0..HOSTILE)
        .map(|i| (i % 2 == 1, open(i % 2 == 1)))
        .collect();
    let mut opened = HOSTILE;
    let mut byte = [0u8; 512];
    while !stop.load(Ordering::SeqCst) {
        for (trickle, s) in &mut crowd {
            let closed = match s.read(&mut byte) {
                Ok(_) => true,
                Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
            };
            let closed = closed || (*trickle && s.write_all(b"a").is_err());
            if closed {
                *s = open(*trickle);
                opened += 1;
            }
        }
        std::thread::sleep(TRICKLE);
    }
    opened
}

/// The section: the same window timed alone, then beside the crowd.
pub(crate) fn hostile(table: &mut Table) {
    println!(
        "\n7. GET /v1/sessions/{{id}} latency, alone and beside {HOSTILE} hostile connections"
    );
    let svc = Core::start(json!({}));
    let v = svc.start_session(&json!({
        "workspace": "ws-latency",
        "folder": svc.folder("latency"),
        "harness": "codex",
        "plan_only": true,
    }));
    let id = v["id"].as_str().unwrap().to_string();
    svc.await_state(&id, "idle");
    let addr: std::net::SocketAddr = svc.base.trim_start_matches("http://").parse().unwrap();
    let path = format!("/v1/sessions/{id}");
    // Each run: the latencies, and the service's CPU time over it (% of a core).
    let measure = || -> (Vec<f64>, f64) {
        let cpu = svc.cpu_threads();
        // A fresh keep-alive connection for each run, one request at a time.
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(10))
            .build();
        let began = Instant::now();
        let mut lat = Vec::new();
        while began.elapsed() < LATENCY_WINDOW {
            let t = Instant::now();
            let (status, _) = Core::call(&agent, &svc.base, "GET", &path, None);
            lat.push(t.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(status, 200);
            std::thread::sleep(LATENCY_GAP);
        }
        let busy = svc.cpu_since(&cpu) / began.elapsed().as_secs_f64() * 100.0;
        (lat, busy)
    };
    let (alone, cpu_alone) = measure();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let crowd = {
        let stop = stop.clone();
        std::thread::spawn(move || hostile_crowd(addr, stop))
    };
    // Let the crowd connect and start trickling before timing.
    std::thread::sleep(Duration::from_millis(500));
    let (loaded, cpu_loaded) = measure();
    stop.store(true, Ordering::SeqCst);
    let opened = crowd.join().unwrap();
    let (a50, a99) = stats(&alone);
    let (l50, l99) = stats(&loaded);
    table.row(
        "GET /v1/sessions/{id}",
        "alone, one keep-alive client",
        ms(a50),
        ms(a99),
        format!(
            "{} requests over {} s; service CPU {cpu_alone:.1}% of a core",
            alone.len(),
            LATENCY_WINDOW.as_secs()
        ),
    );
    table.row(
        "GET /v1/sessions/{id}",
        &format!("beside {HOSTILE} hostile connections (half silent, half trickling a head)"),
        ms(l50),
        ms(l99),
        format!(
            "{} requests over {} s; service CPU {cpu_loaded:.1}% of a core; {opened} hostile connections opened (each closed at its 5 s head deadline, then opened again); median {:.2}x alone, p99 {:.2}x; target p99 < 5 ms",
            loaded.len(),
            LATENCY_WINDOW.as_secs(),
            l50 / a50,
            l99 / a99
        ),
    );
}

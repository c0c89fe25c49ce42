//! Every limit of the HTTP front end in one place; docs/api.md lists them.
//! Each bounds what a local process can make the service hold: bytes,
//! time, descriptors. None depends on the token, which guards actions, not
//! availability.

use std::time::Duration;

pub(crate) use super::bodies::{MAX_BODY, MAX_IMAGES_BODY};

/// How many bodies over [`MAX_BODY`] are read at once: with every
/// connection sending one, the front end holds at most this many of
/// [`MAX_IMAGES_BODY`] and 1 MiB for each other connection. One that waits
/// for its turn longer than [`BODY_TIMEOUT`] is 503 `busy`.
pub(crate) const LARGE_BODIES: usize = 4;

/// The request line and headers together (16 KiB). Past it hyper answers
/// `431` with an empty body and closes the connection.
pub(crate) const MAX_HEAD: usize = 16 << 10;

/// hyper's read buffer ceiling (64 KiB, hyper's minimum is 8 KiB): a head
/// fits whole, a body streams through it.
pub(crate) const READ_BUFFER: usize = 64 << 10;

/// A request head must arrive whole within this, counted from the
/// connection's opening or from its previous answer, so it is also how long
/// an idle keep-alive connection stays open.
pub(crate) const HEAD_TIMEOUT: Duration = Duration::from_secs(5);

/// A body must arrive whole within this, counted from its head (a deadline
/// for the whole body, not per read: a trickle does not extend it).
pub(crate) const BODY_TIMEOUT: Duration = Duration::from_secs(5);

/// After a `413` the connection closes; before it does, at most this much
/// more of the body is read and dropped (into hyper's fixed buffer, never
/// kept), for at most [`LINGER_TIME`], so a client still sending its body
/// reads the answer instead of a reset.
pub(crate) const LINGER_BYTES: usize = 4 << 20;

/// How long a connection lingers after a `413` at most.
pub(crate) const LINGER_TIME: Duration = Duration::from_secs(2);

/// The most connections served at once. Beyond it the acceptor waits for
/// one to close, and new connections wait in the kernel's listen backlog
/// ([`BACKLOG`]); every open one is closed by [`HEAD_TIMEOUT`] or
/// [`BODY_TIMEOUT`] unless it is busy with a request. Also bounded by the
/// descriptor limit, see [`connection_cap`].
pub(crate) const MAX_CONNECTIONS: usize = 1024;

/// The most streams open at once; past it a stream is refused with 503
/// `too_many_streams` (a quarter of the connection cap, so streams never
/// crowd out requests).
pub(crate) const MAX_STREAMS: usize = 256;

/// The listen backlog.
pub(crate) const BACKLOG: u32 = 1024;

/// On stop, requests in progress get this long to be answered; then every
/// connection is dropped.
pub(crate) const STOP_GRACE: Duration = Duration::from_millis(750);

/// Then the front end's runtime waits this long at most for its threads.
pub(crate) const STOP_RUNTIME: Duration = Duration::from_millis(250);

/// The connection cap: [`MAX_CONNECTIONS`], or half the descriptor limit
/// when that is lower, so connections alone cannot use up the descriptors
/// the rest of the service needs (records, status reads, harness pipes).
pub(crate) fn connection_cap() -> usize {
    let soft = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map_or(1024, |(soft, _)| soft);
    let half = usize::try_from(soft / 2).unwrap_or(usize::MAX);
    MAX_CONNECTIONS.min(half).max(16)
}

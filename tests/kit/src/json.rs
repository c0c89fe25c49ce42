//! JSON objects put together from defaults and extra fields.

use serde_json::Value;

/// Sets every field of the object `extra` in the object `into`.
pub fn merge(into: &mut Value, extra: Value) {
    let Value::Object(fields) = extra else {
        panic!("not a JSON object: {extra}");
    };
    for (k, v) in fields {
        into[k] = v;
    }
}

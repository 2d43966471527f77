//! The admin API's path of a resource, as the commands name them.

use weir_store::Kind;

/// The API path of a resource, unencoded; endpoints are named `POOL/ADDR` as in the store.
pub fn path(kind: Kind, name: &str) -> String {
    weir_store::resource_path(kind, name)
}

pub fn endpoint_path(pool: &str, addr: &str) -> String {
    format!("pools/{pool}/endpoints/{addr}")
}

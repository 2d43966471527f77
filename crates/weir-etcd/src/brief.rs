//! An etcd error in a few words, for logs and API answers. Its own file because both the
//! calls going round the members (members.rs) and the diagnosis of why etcd could not be
//! read (why.rs) say it, and the diagnosis takes the members' failures.

/// What etcd or the connection said, without the Debug dump: the status's message and,
/// for a failed connection, its innermost cause ("tcp connect error: Connection refused").
pub(crate) fn brief(e: &etcd_client::Error) -> String {
    let etcd_client::Error::GRpcStatus(s) = e else {
        return e.to_string();
    };
    let mut text = s.message().to_string();
    if let Some(mut cause) = std::error::Error::source(s) {
        while let Some(next) = cause.source() {
            cause = next;
        }
        let cause = cause.to_string();
        if text.is_empty() {
            text = cause;
        } else if !text.contains(&cause) {
            text = format!("{text}: {cause}");
        }
    }
    if text.is_empty() {
        text = format!("gRPC status {:?}", s.code());
    }
    text
}

//! A passthrough connection's ClientHello, read off the client to route by its server name
//! and replayed to the upstream before the relay starts.

/// The hello read off the client, replayed to the upstream before the relay starts.
pub struct Passed {
    pub bytes: Vec<u8>,
    /// The ClientHello's server name, if it sent one.
    pub sni: Option<String>,
}

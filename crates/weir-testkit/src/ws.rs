//! A WebSocket echo backend (tokio-tungstenite does the protocol; the `ws` feature):
//! every text or binary message comes back as it was, pings are answered by the
//! library, and a text `close:CODE:REASON` makes the backend close with that code.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

use crate::listener::{ConnFn, Listener};

pub struct WsUpstream {
    counts: Arc<Counts>,
    listener: Listener,
}

#[derive(Default)]
struct Counts {
    sessions: AtomicU64,
    active: AtomicU64,
}

impl WsUpstream {
    pub async fn echo() -> io::Result<WsUpstream> {
        Self::echo_on(SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    /// An echo backend on a given address (fake-upstream's `--ws-echo`).
    pub async fn echo_on(addr: SocketAddr) -> io::Result<WsUpstream> {
        let counts = Arc::new(Counts::default());
        let on_conn: ConnFn = {
            let counts = counts.clone();
            Arc::new(move |stream| Box::pin(serve(stream, counts.clone())))
        };
        Ok(WsUpstream {
            counts,
            listener: Listener::bind(addr, on_conn)?,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.listener.addr()
    }

    /// WebSocket handshakes completed.
    pub fn sessions(&self) -> u64 {
        self.counts.sessions.load(Relaxed)
    }

    /// WebSocket sessions open right now.
    pub fn active(&self) -> u64 {
        self.counts.active.load(Relaxed)
    }
}

async fn serve(stream: TcpStream, counts: Arc<Counts>) {
    let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await else {
        return;
    };
    counts.sessions.fetch_add(1, Relaxed);
    counts.active.fetch_add(1, Relaxed);
    while let Some(Ok(msg)) = ws.next().await {
        let reply = match msg {
            Message::Text(t) => match t.as_str().strip_prefix("close:") {
                Some(rest) => {
                    let (code, reason) = rest.split_once(':').unwrap_or((rest, ""));
                    let code = code.parse::<u16>().unwrap_or(1000);
                    Message::Close(Some(CloseFrame {
                        code: CloseCode::from(code),
                        reason: reason.to_owned().into(),
                    }))
                }
                None => Message::Text(t),
            },
            Message::Binary(b) => Message::Binary(b),
            // Pings are answered and closes echoed by tungstenite itself.
            _ => continue,
        };
        if ws.send(reply).await.is_err() {
            break;
        }
    }
    counts.active.fetch_sub(1, Relaxed);
}

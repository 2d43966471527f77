//! A listening socket that can be stopped (dropping every connection at once) and started
//! again on the same port: what a flapping backend looks like from the load balancer.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

pub(crate) type ConnFuture = Pin<Box<dyn Future<Output = ()> + Send>>;
pub(crate) type ConnFn = Arc<dyn Fn(TcpStream) -> ConnFuture + Send + Sync>;

pub(crate) struct Listener {
    addr: SocketAddr,
    on_conn: ConnFn,
    running: Mutex<Option<Running>>,
}

struct Running {
    accept: JoinHandle<()>,
    // Every connection task lives here so `stop` can abort them all at once.
    conns: Arc<Mutex<JoinSet<()>>>,
}

impl Listener {
    /// Binds `addr` (port 0 picks one) and starts accepting.
    pub(crate) fn bind(addr: SocketAddr, on_conn: ConnFn) -> io::Result<Listener> {
        let tcp = listen(addr)?;
        let listener = Listener {
            addr: tcp.local_addr()?,
            on_conn,
            running: Mutex::new(None),
        };
        listener.run(tcp);
        Ok(listener)
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub(crate) fn is_running(&self) -> bool {
        self.running.lock().unwrap().is_some()
    }

    /// Closes the listening socket and every open connection; returns once they are gone.
    pub(crate) async fn stop(&self) {
        let Some(r) = self.running.lock().unwrap().take() else {
            return;
        };
        r.accept.abort();
        let _ = r.accept.await;
        // The accept loop is gone, so nothing adds to the set any more.
        let mut conns = std::mem::take(&mut *r.conns.lock().unwrap());
        conns.shutdown().await;
    }

    /// Stops accepting, calls `signal` (which asks connections to wind down),
    /// then waits for every connection to end on its own.
    pub(crate) async fn stop_with(&self, signal: impl FnOnce()) {
        let Some(r) = self.running.lock().unwrap().take() else {
            return;
        };
        r.accept.abort();
        let _ = r.accept.await;
        signal();
        let mut conns = std::mem::take(&mut *r.conns.lock().unwrap());
        while conns.join_next().await.is_some() {}
    }

    /// Listens again on the same address; a no-op when already running.
    pub(crate) fn start(&self) -> io::Result<()> {
        if self.is_running() {
            return Ok(());
        }
        self.run(listen(self.addr)?);
        Ok(())
    }

    fn run(&self, tcp: TcpListener) {
        let conns = Arc::new(Mutex::new(JoinSet::new()));
        let accept = tokio::spawn(accept_loop(tcp, self.on_conn.clone(), conns.clone()));
        *self.running.lock().unwrap() = Some(Running { accept, conns });
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // Dropping the JoinSet aborts the connection tasks; the accept task needs an abort.
        if let Some(r) = self.running.get_mut().unwrap().take() {
            r.accept.abort();
        }
    }
}

fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    // Rebinding after `stop` must work while old connections sit in TIME_WAIT.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

async fn accept_loop(tcp: TcpListener, on_conn: ConnFn, conns: Arc<Mutex<JoinSet<()>>>) {
    loop {
        match tcp.accept().await {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                let fut = on_conn(stream);
                let mut set = conns.lock().unwrap();
                while set.try_join_next().is_some() {}
                set.spawn(fut);
            }
            // EMFILE and friends: back off instead of spinning.
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

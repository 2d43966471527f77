//! Access logs: one JSON line per request, per listener, to stdout or a file.
//!
//! The data plane never blocks on a log: entries go through a bounded
//! channel to a writer thread per destination, and an entry that finds the
//! channel full is dropped and counted (`weir_access_log_dropped_total`).
//! Files are reopened on SIGUSR1, so logrotate can move them away.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::Serialize;
use weir_config::AccessLog;

/// Entries buffered per destination before new ones are dropped.
const CAPACITY: usize = 16 * 1024;

/// Bumped by `reopen`: writers reopen their file before the next write.
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// Entries dropped because a writer fell behind.
pub static DROPPED: AtomicU64 = AtomicU64::new(0);

/// One request, as logged.
#[derive(Debug, Serialize)]
pub struct Entry {
    /// Seconds since the Unix epoch, with microseconds.
    pub time: f64,
    pub listener: Arc<str>,
    /// `IP:PORT`, or the IP alone when it came from a trusted proxy's header (port 0).
    #[serde(serialize_with = "client_str")]
    pub client: SocketAddr,
    pub method: String,
    /// The client's HTTP version: `"HTTP/1.1"`, `"HTTP/2"`, `"HTTP/1.0"`.
    pub protocol: &'static str,
    pub host: String,
    pub path: String,
    pub status: u16,
    pub bytes: u64,
    pub route: String,
    pub pool: String,
    pub endpoint: String,
    pub queue_ms: f64,
    pub connect_ms: f64,
    pub first_byte_ms: f64,
    pub total_ms: f64,
    pub retries: u32,
    pub reason: Option<&'static str>,
    /// On a TLS listener: `"1.2"` or `"1.3"`, and the server name the client sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_version: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sni: Option<Arc<str>>,
    /// A gRPC call's status, from the answer's head (trailers-only, weir's own answers
    /// included) or its trailers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grpc_status: Option<u16>,
    /// The request id, on routes whose headers filter keeps one (`request_id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The user a basic_auth filter let in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

fn client_str<S: serde::Serializer>(a: &SocketAddr, s: S) -> Result<S::Ok, S::Error> {
    match a.port() {
        0 => s.collect_str(&a.ip()),
        _ => s.collect_str(a),
    }
}

impl Entry {
    /// A line for a request on `listener` from `client`, stamped now, with
    /// everything else still unknown (empty, zero).
    pub fn begin(listener: Arc<str>, client: SocketAddr) -> Entry {
        Entry {
            time: Entry::now_secs(),
            listener,
            client,
            method: String::new(),
            protocol: "",
            host: String::new(),
            path: String::new(),
            status: 0,
            bytes: 0,
            route: String::new(),
            pool: String::new(),
            endpoint: String::new(),
            queue_ms: 0.0,
            connect_ms: 0.0,
            first_byte_ms: 0.0,
            total_ms: 0.0,
            retries: 0,
            reason: None,
            tls_version: None,
            sni: None,
            grpc_status: None,
            request_id: None,
            user: None,
        }
    }

    pub fn now_secs() -> f64 {
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
    }
}

/// Where a listener's entries go.
#[derive(Debug, Clone)]
pub struct Sink(SyncSender<Entry>);

impl Sink {
    #[inline]
    pub fn log(&self, e: Entry) {
        if let Err(TrySendError::Full(_)) = self.0.try_send(e) {
            DROPPED.fetch_add(1, Relaxed);
        }
    }
}

/// Asks every file writer to reopen its file (SIGUSR1).
pub fn reopen() {
    GENERATION.fetch_add(1, Relaxed);
}

/// One writer per destination, shared by the listeners that name it.
#[derive(Debug, Default)]
pub struct Sinks {
    open: HashMap<AccessLog, Sink>,
}

impl Sinks {
    /// The sink for `dest`, starting its writer (and opening its file) if new.
    pub fn get(&mut self, dest: &AccessLog) -> io::Result<Sink> {
        if let Some(s) = self.open.get(dest) {
            return Ok(s.clone());
        }
        let out = Out::open(dest)?;
        let (tx, rx) = sync_channel(CAPACITY);
        std::thread::Builder::new()
            .name("weir-access-log".into())
            .spawn(move || write_loop(rx, out))?;
        let sink = Sink(tx);
        self.open.insert(dest.clone(), sink.clone());
        Ok(sink)
    }

    /// Forgets destinations no listener uses any more (their writers end
    /// once the last entry is written).
    pub fn retain(&mut self, used: &[AccessLog]) {
        self.open.retain(|d, _| used.contains(d));
    }
}

enum Out {
    Stdout(BufWriter<io::Stdout>),
    File {
        path: PathBuf,
        w: BufWriter<File>,
        generation: u64,
    },
}

impl Out {
    fn open(dest: &AccessLog) -> io::Result<Out> {
        Ok(match dest {
            AccessLog::Stdout => Out::Stdout(BufWriter::new(io::stdout())),
            AccessLog::File(path) => Out::File {
                w: BufWriter::new(append(path)?),
                path: path.clone(),
                generation: GENERATION.load(Relaxed),
            },
        })
    }

    fn writer(&mut self) -> &mut dyn Write {
        if let Out::File {
            path,
            w,
            generation,
        } = self
        {
            let now = GENERATION.load(Relaxed);
            if *generation != now {
                *generation = now;
                let _ = w.flush();
                match append(path) {
                    Ok(f) => *w = BufWriter::new(f),
                    Err(e) => tracing::error!("access log {}: cannot reopen: {e}", path.display()),
                }
            }
        }
        match self {
            Out::Stdout(w) => w,
            Out::File { w, .. } => w,
        }
    }
}

fn append(path: &PathBuf) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

fn write_loop(rx: Receiver<Entry>, mut out: Out) {
    loop {
        // Batch what is waiting, flush when the channel runs dry.
        match rx.recv_timeout(Duration::from_millis(500)) {
            Ok(e) => {
                let w = out.writer();
                let _ = serde_json::to_writer(&mut *w, &e);
                let _ = w.write_all(b"\n");
                while let Ok(e) = rx.try_recv() {
                    let _ = serde_json::to_writer(&mut *w, &e);
                    let _ = w.write_all(b"\n");
                }
                let _ = w.flush();
            }
            Err(RecvTimeoutError::Timeout) => {
                // Also picks up a reopen request while idle.
                let _ = out.writer().flush();
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

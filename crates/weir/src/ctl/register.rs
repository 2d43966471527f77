//! `weir ctl register`: keep a command registered as an endpoint (a lease) while it runs.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitCode, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::{json, Map, Value};

use super::client::{ApiError, Client, Precondition};
use super::error::CtlError;
use super::paths::endpoint_path;

#[derive(Debug, Args)]
pub struct RegisterArgs {
    /// The pool to join.
    #[arg(long)]
    pub pool: String,
    /// The command's IP:PORT (or HOST:PORT), as weir should reach it.
    #[arg(long, value_parser = weir_config::endpoint_target)]
    pub addr: String,
    #[arg(long, value_name = "N")]
    pub weight: Option<u32>,
    /// How long weir keeps the endpoint without a heartbeat (1s..1h).
    #[arg(long, default_value = "10s", value_name = "D", value_parser = parse_ttl)]
    pub ttl: String,
    /// The command to run, after `--`. It runs in its own process group, so a terminal's
    /// Ctrl-C reaches it once, through `weir ctl`, after the deregistration.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

fn parse_ttl(s: &str) -> Result<String, String> {
    weir_config::parse_duration(s)?;
    Ok(s.to_owned())
}

const FORWARDED: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

/// One flag per forwarded signal, set by signal-hook's handler; the supervising loop acts on
/// it (a handler may only do async-signal-safe work).
type Flags = Vec<(libc::c_int, Arc<AtomicBool>)>;

fn install_handlers() -> Flags {
    FORWARDED
        .iter()
        .map(|&sig| {
            let flag = Arc::new(AtomicBool::new(false));
            if let Err(e) = signal_hook::flag::register(sig, flag.clone()) {
                log(format_args!("cannot watch signal {sig}: {e}"));
            }
            (sig, flag)
        })
        .collect()
}

fn log(msg: impl std::fmt::Display) {
    eprintln!("weir ctl register: {msg}");
}

/// Where the lease stands, as far as this process knows.
#[derive(Debug, PartialEq, Eq)]
enum Lease {
    /// Not registered yet (weir was unreachable) or weir forgot it.
    Missing,
    Held,
    /// Someone made it an operator's endpoint (no lease): not ours to renew or delete.
    TakenOver,
    /// Deregistered on the way out.
    Released,
}

struct Registration<'a> {
    client: &'a Client,
    path: String,
    spec: Value,
    what: String,
    lease: Lease,
}

impl Registration<'_> {
    /// A precondition-less PUT: adds the endpoint or renews its lease.
    fn register(&mut self) -> Result<(), ApiError> {
        self.client
            .put(&self.path, &self.spec, Precondition::None)?;
        self.lease = Lease::Held;
        log(format_args!("registered {}", self.what));
        Ok(())
    }

    fn heartbeat(&mut self) {
        let r = match self.lease {
            Lease::Missing => self.register(),
            Lease::Held => match self.client.post_empty(&format!("{}/heartbeat", self.path)) {
                Err(e) if e.status() == Some(404) => {
                    log("weir does not know the endpoint (expired, or weir restarted); registering again");
                    self.lease = Lease::Missing;
                    self.register()
                }
                r => r,
            },
            Lease::TakenOver | Lease::Released => return,
        };
        match r {
            Ok(()) => {}
            Err(e) if e.status() == Some(409) || e.status() == Some(428) => {
                log(format_args!(
                    "{} is now an operator's endpoint (no lease); no more heartbeats: {e}",
                    self.what
                ));
                self.lease = Lease::TakenOver;
            }
            Err(e) => log(format_args!("heartbeat failed: {e}")),
        }
    }

    /// Deletes the endpoint if it is still a lease; retried when its version changed
    /// between the read and the delete (a heartbeat changing the weight, say).
    fn deregister(&mut self) {
        if self.lease == Lease::TakenOver || self.lease == Lease::Released {
            return;
        }
        self.lease = Lease::Released;
        for _ in 0..5 {
            let (spec, version) = match self.client.get(&self.path) {
                Ok(Some(found)) => found,
                Ok(None) => {
                    log(format_args!("{} was already gone", self.what));
                    return;
                }
                Err(e) => {
                    log(format_args!("cannot deregister: {e}"));
                    return;
                }
            };
            if spec.get("ttl").is_none() {
                log(format_args!(
                    "{} is now an operator's endpoint; left in place",
                    self.what
                ));
                return;
            }
            match self.client.delete(&self.path, version) {
                Ok(()) => {
                    log(format_args!("deregistered {}", self.what));
                    return;
                }
                Err(e) if e.status() == Some(404) => return,
                Err(e) if e.status() == Some(412) => continue,
                Err(e) => {
                    log(format_args!("cannot deregister: {e}"));
                    return;
                }
            }
        }
        log("cannot deregister: it kept changing; the lease will expire");
    }
}

pub fn register(client: &Client, args: RegisterArgs) -> Result<ExitCode, CtlError> {
    let ttl = weir_config::parse_duration(&args.ttl).expect("checked by clap");
    let every = Duration::from_millis((ttl.as_millis() / 3).max(100) as u64);
    let mut spec = Map::new();
    if let Some(w) = args.weight {
        spec.insert("weight".into(), json!(w));
    }
    spec.insert("ttl".into(), json!(args.ttl));
    let mut reg = Registration {
        client,
        path: endpoint_path(&args.pool, &args.addr),
        spec: Value::Object(spec),
        what: format!("{} in pool {} (ttl {})", args.addr, args.pool, args.ttl),
        lease: Lease::Missing,
    };
    // Before the first request, so that a SIGTERM during start-up is not fatal but
    // handled like any other.
    let flags = install_handlers();
    match reg.register() {
        Ok(()) => {}
        // weir said no (unknown pool, bad weight, an operator's endpoint, ...): running the
        // command would serve nobody, and retrying cannot help.
        Err(ApiError::Problem(p)) if (400..500).contains(&p.status) => {
            return Err(ApiError::Problem(p).into())
        }
        Err(e) => log(format_args!(
            "cannot register yet ({e}); starting anyway, will retry every {every:?}"
        )),
    }
    let program = &args.command[0];
    let mut child = match Command::new(program)
        .args(&args.command[1..])
        .process_group(0)
        .spawn()
    {
        Ok(c) => c,
        Err(source) => {
            reg.deregister();
            return Err(CtlError::Spawn {
                program: program.clone(),
                source,
            });
        }
    };
    log(format_args!("started {program} (pid {})", child.id()));
    let status = supervise(&mut reg, &mut child, every, &flags);
    log(format_args!("{program} exited ({status})"));
    reg.deregister();
    Ok(exit_code(status))
}

/// Heartbeats until the child exits; passes signals on, deregistering first on the ones
/// that stop it so weir stops sending new requests while it shuts down.
fn supervise(
    reg: &mut Registration,
    child: &mut Child,
    every: Duration,
    flags: &Flags,
) -> ExitStatus {
    let mut next_beat = Instant::now() + every;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status,
            Ok(None) => {}
            Err(e) => {
                log(format_args!("cannot wait for the command: {e}"));
                return child
                    .wait()
                    .unwrap_or_else(|_| ExitStatus::from_raw(1 << 8));
            }
        }
        for (sig, flag) in flags {
            let sig = *sig;
            if !flag.swap(false, Ordering::SeqCst) {
                continue;
            }
            if sig != libc::SIGHUP {
                reg.deregister();
            }
            log(format_args!("passing signal {sig} to the command"));
            // SAFETY: kill(2) on our own child, which has not been reaped yet (try_wait
            // above returned None), so the pid cannot have been reused.
            unsafe {
                libc::kill(child.id() as libc::pid_t, sig);
            }
        }
        if Instant::now() >= next_beat {
            reg.heartbeat();
            next_beat = Instant::now() + every;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The child's exit code, or 128+N for death by signal N, as a shell reports it.
fn exit_code(status: ExitStatus) -> ExitCode {
    match (status.code(), status.signal()) {
        (Some(c), _) => ExitCode::from(c as u8),
        (None, Some(sig)) => ExitCode::from((128 + sig) as u8),
        (None, None) => ExitCode::FAILURE,
    }
}

//! The floor on io_uring. One ring, one thread, one loop: each turn drains the
//! completion queue, queues what follows from it, and hands the kernel every new
//! submission in the same io_uring_enter that waits for the next completions.
//!
//! Accepts are multishot; each connection's two sockets have a multishot receive
//! into one provided buffer ring; a received buffer is sent on as it is (with
//! MSG_WAITALL, so a send completes whole or fails) and goes back to the ring
//! when its send completes. At most one send per socket is in flight: io_uring
//! does not keep the order of two sends on one socket, so later chunks wait.
//! Upstream connections are opened with a blocking connect: keep-alive benches
//! open a connection once, and the floor measures the requests.

use std::collections::VecDeque;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, IntoRawFd, RawFd};
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::{cqueue, opcode, squeue, types, IoUring, Submitter};

use super::args::{Args, BUF_SIZE};
use super::http::{RequestFramer, ResponseFramer};

const RING_ENTRIES: u32 = 1024;
/// Provided buffers (a power of two), BUF_SIZE each: 16 MiB in all.
const BUFS: u16 = 1024;
const BGID: u16 = 0;
/// Registered file slots: two per connection.
const MAX_CONNS: usize = 2048;

// What a completion is for: op << 56 | buffer id << 32 | connection.
const ACCEPT: u64 = 1;
const RECV: u64 = 2; // + side
const SEND: u64 = 4; // + side
/// How long a turn that submitted sends waits for one completion more than them.
const SEND_WAIT_BOUND: types::Timespec = types::Timespec::new().nsec(1_000_000);
/// A connection's two sockets.
const CLIENT: usize = 0;
const UPSTREAM: usize = 1;

pub fn run(args: &Args) -> crate::Res {
    let listener = TcpListener::bind(args.listen)?;
    let mut ring: IoUring = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_cqsize(RING_ENTRIES * 4)
        .build(RING_ENTRIES)?;
    let fixed = !args.plain_fds;
    if fixed {
        ring.submitter()
            .register_files_sparse(2 * MAX_CONNS as u32)?;
    }
    let mut p = Proxy {
        conns: Vec::new(),
        free: Vec::new(),
        fixed,
        upstream: args.upstream,
        listen_fd: listener.as_raw_fd(),
        bufs: BufRing::new(&ring.submitter())?,
        out: Vec::with_capacity(RING_ENTRIES as usize),
        sends: 0,
        in_flight: 0,
    };
    p.out.push(
        opcode::AcceptMulti::new(types::Fd(listener.as_raw_fd()))
            .build()
            .user_data(ACCEPT << 56),
    );
    let mut sends = 0;
    loop {
        let (submitter, mut sq, mut cq) = ring.split();
        for e in p.out.drain(..) {
            // SAFETY: every entry's buffers (the provided ring's) outlive the ring.
            while unsafe { sq.push(&e) }.is_err() {
                sq.sync();
                submitter.submit()?;
                sq.sync();
            }
        }
        sq.sync();
        // Sends on loopback almost always complete inside the enter that submits
        // them: waiting for one completion more than that skips an enter per send.
        // Only when no older send is in flight (its completion would count), and
        // bounded: a send that blocks may be the only completion still to come.
        let older = p.in_flight - sends;
        let res = if args.wake_on_send || sends == 0 || older > 0 {
            submitter.submit_and_wait(1)
        } else {
            let bound = types::SubmitArgs::new().timespec(&SEND_WAIT_BOUND);
            submitter.submit_with_args(1 + sends, &bound)
        };
        if let Err(e) = res {
            if !matches!(
                e.raw_os_error(),
                Some(libc::EINTR | libc::EBUSY | libc::ETIME)
            ) {
                return Err(e.into());
            }
        }
        cq.sync();
        for cqe in &mut cq {
            p.complete(&submitter, cqe.user_data(), cqe.result(), cqe.flags());
        }
        p.bufs.publish();
        sends = std::mem::take(&mut p.sends);
    }
}

struct Conn {
    fds: [RawFd; 2],
    /// The socket's multishot receive is still armed.
    receiving: [bool; 2],
    /// A send to the socket is in flight.
    sending: [bool; 2],
    /// Received chunks (buffer id, length) waiting for the socket's send.
    queued: [VecDeque<(u16, u32)>; 2],
    closing: bool,
    requests: RequestFramer,
    responses: ResponseFramer,
}

struct Proxy {
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    fixed: bool,
    upstream: SocketAddr,
    listen_fd: RawFd,
    bufs: BufRing,
    /// This turn's submissions.
    out: Vec<squeue::Entry>,
    /// Sends pushed this turn, and sends in flight (those included).
    sends: usize,
    in_flight: usize,
}

impl Proxy {
    fn complete(&mut self, sub: &Submitter, data: u64, res: i32, flags: u32) {
        let (op, bid, i) = (data >> 56, (data >> 32) as u16, data as u32 as usize);
        match op {
            ACCEPT => {
                if res >= 0 {
                    if let Err(e) = self.open(sub, res) {
                        eprintln!("floor: {e}");
                    }
                }
                if !cqueue::more(flags) {
                    self.out.push(
                        opcode::AcceptMulti::new(types::Fd(self.listen_fd))
                            .build()
                            .user_data(data),
                    );
                }
            }
            _ if (RECV..SEND).contains(&op) => {
                let side = (op - RECV) as usize;
                if let Some(bid) = cqueue::buffer_select(flags) {
                    if res > 0 {
                        self.forward(i, side, bid, res as u32);
                    } else {
                        self.bufs.push(bid);
                    }
                }
                if res <= 0 && res != -libc::ENOBUFS {
                    self.close(i);
                }
                if !cqueue::more(flags) {
                    let c = self.conns[i].as_mut().expect("live connection");
                    c.receiving[side] = false;
                    if !c.closing {
                        self.recv(i, side);
                    }
                }
                self.free_if_done(sub, i);
            }
            _ => {
                let side = (op - SEND) as usize;
                self.in_flight -= 1;
                self.bufs.push(bid);
                let c = self.conns[i].as_mut().expect("live connection");
                c.sending[side] = false;
                if res < 0 {
                    self.close(i);
                } else if let Some((next, len)) = c.queued[side].pop_front() {
                    if c.closing {
                        self.bufs.push(next);
                    } else {
                        self.send(i, side, next, len);
                    }
                }
                self.free_if_done(sub, i);
            }
        }
    }

    fn open(&mut self, sub: &Submitter, client: RawFd) -> std::io::Result<()> {
        let up = TcpStream::connect(self.upstream);
        let up = match up {
            Ok(up) => up,
            Err(e) => {
                // SAFETY: the accepted descriptor is ours and used nowhere else.
                unsafe { libc::close(client) };
                return Err(e);
            }
        };
        up.set_nodelay(true)?;
        set_nodelay(client);
        let fds = [client, up.into_raw_fd()];
        let i = self.free.pop().unwrap_or_else(|| {
            self.conns.push(None);
            self.conns.len() - 1
        });
        if self.fixed {
            let registered = match i < MAX_CONNS {
                true => sub.register_files_update(2 * i as u32, &fds).map(drop),
                false => Err(std::io::Error::other("too many connections")),
            };
            if let Err(e) = registered {
                for fd in fds {
                    // SAFETY: both descriptors are ours and used nowhere else yet.
                    unsafe { libc::close(fd) };
                }
                self.free.push(i);
                return Err(e);
            }
        }
        self.conns[i] = Some(Conn {
            fds,
            receiving: [true; 2],
            sending: [false; 2],
            queued: [VecDeque::with_capacity(8), VecDeque::with_capacity(8)],
            closing: false,
            requests: RequestFramer::default(),
            responses: ResponseFramer::default(),
        });
        self.recv(i, CLIENT);
        self.recv(i, UPSTREAM);
        Ok(())
    }

    /// A chunk received on `from` goes to the other socket.
    fn forward(&mut self, i: usize, from: usize, bid: u16, len: u32) {
        let c = self.conns[i].as_mut().expect("live connection");
        let bytes = self.bufs.slice(bid, len);
        // The framing a proxy does; the floor forwards chunks as they come either way.
        if from == CLIENT {
            c.requests.feed(bytes);
        } else {
            c.responses.feed(bytes);
        }
        let to = 1 - from;
        if c.closing {
            self.bufs.push(bid);
        } else if c.sending[to] {
            c.queued[to].push_back((bid, len));
        } else {
            self.send(i, to, bid, len);
        }
    }

    fn recv(&mut self, i: usize, side: usize) {
        let c = self.conns[i].as_mut().expect("live connection");
        c.receiving[side] = true;
        let e = if self.fixed {
            opcode::RecvMulti::new(types::Fixed((2 * i + side) as u32), BGID).build()
        } else {
            opcode::RecvMulti::new(types::Fd(c.fds[side]), BGID).build()
        };
        self.out
            .push(e.user_data(((RECV + side as u64) << 56) | i as u64));
    }

    fn send(&mut self, i: usize, side: usize, bid: u16, len: u32) {
        let c = self.conns[i].as_mut().expect("live connection");
        c.sending[side] = true;
        let buf = self.bufs.ptr(bid);
        let e = if self.fixed {
            opcode::Send::new(types::Fixed((2 * i + side) as u32), buf, len)
        } else {
            opcode::Send::new(types::Fd(c.fds[side]), buf, len)
        };
        let e = e.flags(libc::MSG_WAITALL | libc::MSG_NOSIGNAL).build();
        self.out
            .push(e.user_data(((SEND + side as u64) << 56) | (u64::from(bid) << 32) | i as u64));
        self.sends += 1;
        self.in_flight += 1;
    }

    /// Ends both receives (a shutdown completes them with 0); the connection is
    /// freed once no operation on it is left.
    fn close(&mut self, i: usize) {
        let c = self.conns[i].as_mut().expect("live connection");
        if !c.closing {
            c.closing = true;
            for fd in c.fds {
                // SAFETY: the connection owns its descriptors until it is freed.
                unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
            }
        }
    }

    fn free_if_done(&mut self, sub: &Submitter, i: usize) {
        let c = self.conns[i].as_ref().expect("live connection");
        if !c.closing || c.receiving.iter().chain(&c.sending).any(|&b| b) {
            return;
        }
        let c = self.conns[i].take().expect("live connection");
        for (bid, _) in c.queued.into_iter().flatten() {
            self.bufs.push(bid);
        }
        if self.fixed {
            let _ = sub.register_files_update(2 * i as u32, &[-1, -1]);
        }
        for fd in c.fds {
            // SAFETY: nothing in flight uses the descriptors any more.
            unsafe { libc::close(fd) };
        }
        self.free.push(i);
    }
}

fn set_nodelay(fd: RawFd) {
    let on: libc::c_int = 1;
    // SAFETY: a plain setsockopt on a socket we own, with an int option.
    unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
}

/// The provided buffer ring: BUFS entries the kernel picks receive buffers from,
/// and the BUFS buffers themselves. Both live as long as the process.
struct BufRing {
    entries: *mut types::BufRingEntry,
    data: *mut u8,
    /// Our tail; the kernel sees it at `publish`.
    tail: u16,
}

impl BufRing {
    fn new(sub: &Submitter) -> std::io::Result<Self> {
        let len = usize::from(BUFS) * std::mem::size_of::<types::BufRingEntry>();
        // SAFETY: an anonymous private mapping (page-aligned, as the kernel wants).
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let data = vec![0u8; usize::from(BUFS) * BUF_SIZE].leak().as_mut_ptr();
        let mut ring = BufRing {
            entries: map.cast(),
            data,
            tail: 0,
        };
        // SAFETY: the mapping is never unmapped.
        unsafe { sub.register_buf_ring_with_flags(map as u64, BUFS, BGID, 0)? };
        for bid in 0..BUFS {
            ring.push(bid);
        }
        ring.publish();
        Ok(ring)
    }

    /// Gives buffer `bid` back (seen by the kernel at the next `publish`).
    fn push(&mut self, bid: u16) {
        // SAFETY: the index is within the mapping; the kernel reads only entries
        // up to the published tail, and this one is past it.
        let e = unsafe { &mut *self.entries.add(usize::from(self.tail & (BUFS - 1))) };
        e.set_addr(self.ptr(bid) as u64);
        e.set_len(BUF_SIZE as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    fn publish(&self) {
        // SAFETY: the tail is a u16 in the ring's first entry, shared with the kernel.
        let tail = unsafe { &*(types::BufRingEntry::tail(self.entries).cast::<AtomicU16>()) };
        tail.store(self.tail, Ordering::Release);
    }

    fn ptr(&self, bid: u16) -> *mut u8 {
        // SAFETY: bid < BUFS, within the allocation.
        unsafe { self.data.add(usize::from(bid) * BUF_SIZE) }
    }

    fn slice(&self, bid: u16, len: u32) -> &[u8] {
        // SAFETY: the kernel wrote `len` bytes there and gave the buffer back to us.
        unsafe { std::slice::from_raw_parts(self.ptr(bid), len as usize) }
    }
}

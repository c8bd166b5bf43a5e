//! Velocity commands over UDP from the desktop (or any script: see [`super::datagram`]).
use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};

use super::Input;
use super::datagram::{Datagram, LEN};

/// A non-blocking UDP socket drained once per control period.
pub struct UdpSource {
    socket: UdpSocket,
    last_seq: Option<u32>,
    /// Datagrams dropped: malformed, or not newer than the last taken.
    pub dropped: u64,
}

impl UdpSource {
    pub fn bind(addr: SocketAddr) -> std::io::Result<Self> {
        let socket = UdpSocket::bind(addr)?;
        socket.set_nonblocking(true)?;
        Ok(Self {
            socket,
            last_seq: None,
            dropped: 0,
        })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Every datagram waiting, in arrival order, as inputs; never blocks. A malformed or stale
    /// datagram (a sequence number not newer than the last taken: a late or repeated packet)
    /// is counted in `dropped` and skipped.
    pub fn poll(&mut self, out: &mut Vec<Input>) -> std::io::Result<()> {
        // One byte more than a datagram: a longer one is seen as too long, not cut to fit.
        let mut buf = [0u8; LEN + 1];
        loop {
            match self.socket.recv(&mut buf) {
                Ok(n) => match Datagram::decode(&buf[..n]) {
                    Ok(d) if self.last_seq.is_none_or(|s| d.seq > s) => {
                        self.last_seq = Some(d.seq);
                        out.push(d.input());
                    }
                    _ => self.dropped += 1,
                },
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }
}

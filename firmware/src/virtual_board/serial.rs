//! embedded-io over a pseudo-terminal's master side, so the firmware's runner serves a pty as it
//! would a UART.

use embedded_io::{ErrorKind, ErrorType, Read, ReadReady, Write};
use serialport::{SerialPort, TTYPort};
use std::io::{Read as _, Write as _};
use std::os::fd::AsRawFd;
use std::time::Duration;

pub struct PtySerial {
    port: TTYPort,
}

impl PtySerial {
    pub fn new(port: TTYPort) -> Self {
        Self { port }
    }

    /// Sleeps until bytes arrive or `timeout` passes, whichever is first.
    pub fn wait_readable(&self, timeout: Duration) {
        let mut fds = libc::pollfd {
            fd: self.port.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as _,
            tv_nsec: timeout.subsec_nanos() as _,
        };
        // SAFETY: one valid pollfd, a valid timespec, no signal mask.
        unsafe { libc::ppoll(&mut fds, 1, &ts, std::ptr::null()) };
    }
}

fn kind(e: std::io::Error) -> ErrorKind {
    match e.kind() {
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => ErrorKind::TimedOut,
        _ => ErrorKind::Other,
    }
}

impl ErrorType for PtySerial {
    type Error = ErrorKind;
}

impl Read for PtySerial {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        self.port.read(buf).map_err(kind)
    }
}

impl ReadReady for PtySerial {
    fn read_ready(&mut self) -> Result<bool, Self::Error> {
        self.port
            .bytes_to_read()
            .map(|n| n > 0)
            .map_err(|_| ErrorKind::Other)
    }
}

impl Write for PtySerial {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        // Small chunks: a large write to a full pty can block past its timeout.
        let n = buf.len().min(256);
        self.port.write(&buf[..n]).map_err(kind)
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        self.port.flush().map_err(kind)
    }
}

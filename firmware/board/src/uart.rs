//! embedded-io over the HAL's UART (which speaks embedded-hal-nb): `read_ready` drains the
//! receive register into a small buffer so the runner can poll without blocking.

use embedded_hal_nb::serial::{Read as _, Write as _};
use embedded_io::{ErrorKind, ErrorType, Read, ReadReady, Write};
use stm32f4xx_hal::serial::{Instance, Serial};

pub struct Uart<U: Instance> {
    serial: Serial<U, u8>,
    buf: [u8; 64],
    len: usize,
}

impl<U: Instance> Uart<U> {
    pub fn new(serial: Serial<U, u8>) -> Self {
        Self {
            serial,
            buf: [0; 64],
            len: 0,
        }
    }

    fn drain(&mut self) {
        while self.len < self.buf.len() {
            match self.serial.read() {
                Ok(b) => {
                    self.buf[self.len] = b;
                    self.len += 1;
                }
                // An overrun or framing error lost bytes; the decoder resynchronises on what
                // follows.
                Err(nb::Error::Other(_)) => continue,
                Err(nb::Error::WouldBlock) => break,
            }
        }
    }
}

impl<U: Instance> ErrorType for Uart<U> {
    type Error = ErrorKind;
}

impl<U: Instance> ReadReady for Uart<U> {
    fn read_ready(&mut self) -> Result<bool, ErrorKind> {
        self.drain();
        Ok(self.len > 0)
    }
}

impl<U: Instance> Read for Uart<U> {
    fn read(&mut self, out: &mut [u8]) -> Result<usize, ErrorKind> {
        while self.len == 0 {
            self.drain();
        }
        let n = out.len().min(self.len);
        out[..n].copy_from_slice(&self.buf[..n]);
        self.buf.copy_within(n..self.len, 0);
        self.len -= n;
        Ok(n)
    }
}

impl<U: Instance> Write for Uart<U> {
    fn write(&mut self, bytes: &[u8]) -> Result<usize, ErrorKind> {
        for &b in bytes {
            nb::block!(self.serial.write(b)).map_err(|_| ErrorKind::Other)?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> Result<(), ErrorKind> {
        nb::block!(self.serial.flush()).map_err(|_| ErrorKind::Other)
    }
}

//! embedded-io over USART1. Reception is interrupt-driven: the RXNE interrupt moves each byte
//! into a ring buffer as it arrives, so a control tick or a blocking IMU read (0.4 ms, 40 bytes
//! at 1 Mbaud) no longer overruns the one-byte receive register. Transmission is blocking.

use core::cell::RefCell;
use cortex_m::interrupt::{Mutex, free};
use embedded_hal_nb::serial::{Read as _, Write as _};
use embedded_io::{ErrorKind, ErrorType, Read, ReadReady, Write};
use stm32f4xx_hal::pac::{USART1, interrupt};
use stm32f4xx_hal::serial::{Rx, RxListen, Serial, Tx};

/// Bytes buffered between interrupt and main loop: 2 ms at 1 Mbaud.
const RING: usize = 256;

struct Ring {
    buf: [u8; RING],
    head: usize,
    len: usize,
}

impl Ring {
    fn push(&mut self, b: u8) {
        if self.len == RING {
            // Full: drop the oldest byte; the decoder resynchronises.
            self.head = (self.head + 1) % RING;
            self.len -= 1;
        }
        self.buf[(self.head + self.len) % RING] = b;
        self.len += 1;
    }

    fn pop_into(&mut self, out: &mut [u8]) -> usize {
        let n = out.len().min(self.len);
        for slot in out.iter_mut().take(n) {
            *slot = self.buf[self.head];
            self.head = (self.head + 1) % RING;
        }
        self.len -= n;
        n
    }
}

static RX: Mutex<RefCell<Option<Rx<USART1, u8>>>> = Mutex::new(RefCell::new(None));
static RECEIVED: Mutex<RefCell<Ring>> = Mutex::new(RefCell::new(Ring {
    buf: [0; RING],
    head: 0,
    len: 0,
}));

#[interrupt]
fn USART1() {
    free(|cs| {
        let mut rx = RX.borrow(cs).borrow_mut();
        let mut ring = RECEIVED.borrow(cs).borrow_mut();
        if let Some(rx) = rx.as_mut() {
            // A few reads at most: an error read clears its flag and the next one moves on.
            for _ in 0..4 {
                match rx.read() {
                    Ok(b) => ring.push(b),
                    Err(nb::Error::WouldBlock) => break,
                    Err(nb::Error::Other(_)) => {}
                }
            }
        }
    });
}

pub struct Uart {
    tx: Tx<USART1, u8>,
}

impl Uart {
    /// Takes the UART, starts interrupt-driven reception.
    pub fn new(serial: Serial<USART1, u8>) -> Self {
        let (tx, mut rx) = serial.split();
        rx.listen();
        free(|cs| RX.borrow(cs).replace(Some(rx)));
        // SAFETY: the handler only touches RX and RECEIVED, both behind critical sections.
        unsafe { cortex_m::peripheral::NVIC::unmask(stm32f4xx_hal::pac::Interrupt::USART1) };
        Self { tx }
    }
}

impl ErrorType for Uart {
    type Error = ErrorKind;
}

impl ReadReady for Uart {
    fn read_ready(&mut self) -> Result<bool, ErrorKind> {
        Ok(free(|cs| RECEIVED.borrow(cs).borrow().len > 0))
    }
}

impl Read for Uart {
    fn read(&mut self, out: &mut [u8]) -> Result<usize, ErrorKind> {
        loop {
            let n = free(|cs| RECEIVED.borrow(cs).borrow_mut().pop_into(out));
            if n > 0 || out.is_empty() {
                return Ok(n);
            }
        }
    }
}

impl Write for Uart {
    fn write(&mut self, bytes: &[u8]) -> Result<usize, ErrorKind> {
        for &b in bytes {
            nb::block!(self.tx.write(b)).map_err(|_| ErrorKind::Other)?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> Result<(), ErrorKind> {
        nb::block!(self.tx.flush()).map_err(|_| ErrorKind::Other)
    }
}

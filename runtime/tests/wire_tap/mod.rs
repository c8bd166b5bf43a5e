//! A wire tap for the runtime's integration tests: the runtime opens a pseudo-terminal (through
//! a symlink, as it would open `/dev/ttyUSB0`), the tap forwards every byte to and from the
//! virtual board's pseudo-terminal, and decodes what the runtime sent, so a test asserts on
//! the bytes that reached the board. It can also pull the cable (close the runtime's pty, then
//! offer a new one behind the same link), mute the board (swallow its answers) and lose the
//! answers to a device's next PINGs.
#![allow(dead_code)]
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use clawrl_protocol::table::{board, servo};
use clawrl_protocol::units::ids;
use clawrl_protocol::{Command, Decoder};
use serialport::{SerialPort, TTYPort};

/// One instruction the runtime sent, as the board received it.
#[derive(Debug, Clone, PartialEq)]
pub enum Sent {
    /// SYNC WRITE of Goal Position: ticks per servo (ID 1-16 order).
    Goals(Vec<(u8, i32)>),
    /// WRITE of the board's Safety Command.
    BoardCommand(u8),
    /// WRITE of Goal Position to one servo.
    Goal(u8, i32),
    Write {
        id: u8,
        address: u16,
        len: usize,
    },
    Read {
        id: u8,
        address: u16,
        length: u16,
    },
    Ping(u8),
    Other(u8),
}

#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    cut: AtomicBool,
    mute: AtomicBool,
    /// (device, how many of its next PINGs go unanswered).
    lose_pings: Mutex<(u8, u32)>,
    /// The answer to the last packet is swallowed (a PING being lost).
    losing: AtomicBool,
    sent: Mutex<Vec<Sent>>,
    /// Times the runtime side was (re)created.
    offers: Mutex<u32>,
}

pub struct Tap {
    link: PathBuf,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

fn open_pair(link: &Path) -> (TTYPort, TTYPort) {
    let (mut master, slave) = TTYPort::pair().expect("pty pair");
    master.set_timeout(Duration::from_millis(1)).unwrap();
    let name = slave.name().expect("pty name");
    let tmp = link.with_extension("new");
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(&name, &tmp).unwrap();
    std::fs::rename(&tmp, link).unwrap();
    (master, slave)
}

impl Tap {
    /// Taps the board serving on `board_path`; the runtime opens [`Tap::link`].
    pub fn new(board_path: &str, dir: &Path) -> Self {
        let link = dir.join("ttyCLAW");
        let mut board = serialport::new(board_path, 1_000_000)
            .timeout(Duration::from_millis(1))
            .open_native()
            .expect("open the virtual board");
        let shared = Arc::new(Shared::default());
        let mut side = Some(open_pair(&link));
        *shared.offers.lock().unwrap() += 1;
        let (sh, l) = (shared.clone(), link.clone());
        let thread = std::thread::spawn(move || {
            let mut decoder: Decoder<1024> = Decoder::new();
            let mut buf = [0u8; 512];
            while !sh.stop.load(Ordering::Relaxed) {
                if sh.cut.load(Ordering::Relaxed) {
                    side = None;
                } else if side.is_none() {
                    side = Some(open_pair(&l));
                    *sh.offers.lock().unwrap() += 1;
                }
                let mut idle = true;
                if let Some((master, _)) = side.as_mut()
                    && let Ok(n) = master.read(&mut buf)
                    && n > 0
                {
                    idle = false;
                    for &b in &buf[..n] {
                        decoder.push(b);
                        while let Some(ev) = decoder.next_event() {
                            if let Ok(p) = ev {
                                let sent = classify(&p);
                                sh.losing.store(sh.loses(&sent), Ordering::Relaxed);
                                sh.sent.lock().unwrap().push(sent);
                            }
                        }
                    }
                    board.write_all(&buf[..n]).unwrap();
                }
                if let Ok(n) = board.read(&mut buf)
                    && n > 0
                {
                    idle = false;
                    if !sh.mute.load(Ordering::Relaxed)
                        && !sh.losing.load(Ordering::Relaxed)
                        && let Some((master, _)) = side.as_mut()
                    {
                        let _ = master.write_all(&buf[..n]);
                    }
                }
                if idle {
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        });
        Self {
            link,
            shared,
            thread: Some(thread),
        }
    }

    /// The path the runtime opens.
    pub fn link(&self) -> &Path {
        &self.link
    }

    /// Pulls the cable (`true`) or plugs a new one in behind the same link (`false`).
    pub fn cut(&self, cut: bool) {
        self.shared.cut.store(cut, Ordering::Relaxed);
    }

    /// Swallows the board's answers while `true`.
    pub fn mute(&self, mute: bool) {
        self.shared.mute.store(mute, Ordering::Relaxed);
    }

    /// The board's answers to the next `n` PINGs of device `id` never reach the runtime.
    pub fn lose_pings(&self, id: u8, n: u32) {
        *self.shared.lose_pings.lock().unwrap() = (id, n);
    }

    /// Everything the runtime sent so far.
    pub fn sent(&self) -> Vec<Sent> {
        self.shared.sent.lock().unwrap().clone()
    }

    pub fn offers(&self) -> u32 {
        *self.shared.offers.lock().unwrap()
    }
}

impl Shared {
    /// Whether the answer to `sent` is to be lost (and counts it).
    fn loses(&self, sent: &Sent) -> bool {
        let mut lose = self.lose_pings.lock().unwrap();
        let hit = matches!(sent, Sent::Ping(id) if *id == lose.0) && lose.1 > 0;
        if hit {
            lose.1 -= 1;
        }
        hit
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn classify(p: &clawrl_protocol::Packet<'_>) -> Sent {
    match Command::parse(p) {
        Ok(Command::SyncWrite(w)) if w.address == servo::GOAL_POSITION && w.length == 4 => {
            Sent::Goals(
                w.entries()
                    .map(|(id, d)| (id, i32::from_le_bytes([d[0], d[1], d[2], d[3]])))
                    .collect(),
            )
        }
        Ok(Command::Write { address, data }) if p.id == ids::BOARD => {
            if address == board::SAFETY_COMMAND && data.len() == 1 {
                Sent::BoardCommand(data[0])
            } else {
                Sent::Write {
                    id: p.id,
                    address,
                    len: data.len(),
                }
            }
        }
        Ok(Command::Write { address, data }) if address == servo::GOAL_POSITION => Sent::Goal(
            p.id,
            i32::from_le_bytes([data[0], data[1], data[2], data[3]]),
        ),
        Ok(Command::Write { address, data }) => Sent::Write {
            id: p.id,
            address,
            len: data.len(),
        },
        Ok(Command::Read { address, length }) => Sent::Read {
            id: p.id,
            address,
            length,
        },
        Ok(Command::Ping) => Sent::Ping(p.id),
        _ => Sent::Other(p.instruction),
    }
}

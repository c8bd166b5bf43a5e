//! `clawrl teleop --to HOST:PORT`: drives a robot whose `clawrl-runtime run` takes network
//! commands (`[command] source = "network"`) from the keyboard, sending the command datagram
//! (runtime/README.md, "Live commands") at `--rate` Hz and showing what it sends. With
//! `--forward/--lateral/--yaw` and `--seconds` it sends that one command instead, for scripts.
//! The runtime keeps the robot safe whatever this sends: clipping, a rate limit, and the stop
//! when the datagrams stop coming.
use std::io::{IsTerminal, Write};
use std::net::{ToSocketAddrs, UdpSocket};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clawrl_runtime::command::datagram::{Datagram, FLAG_ESTOP, FLAG_STOP};
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyModifiers};

/// Drive a robot over the network: the keyboard (or a fixed command for --seconds) as command
/// datagrams to a runtime listening with `[command] source = "network"`
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The robot's command address: host and port of its `command.listen`.
    #[arg(long)]
    to: String,
    /// Datagrams per second (the runtime stops the robot when they stop coming).
    #[arg(long, default_value_t = 20.0)]
    rate: f64,
    /// Send this forward velocity (m/s) for --seconds instead of reading the keyboard.
    #[arg(long, allow_hyphen_values = true)]
    forward: Option<f64>,
    #[arg(long, allow_hyphen_values = true)]
    lateral: Option<f64>,
    /// Yaw rate, rad/s (positive turns left).
    #[arg(long, allow_hyphen_values = true)]
    yaw: Option<f64>,
    /// How long to send the fixed command.
    #[arg(long)]
    seconds: Option<f64>,
    /// How much one key press changes a velocity.
    #[arg(long, default_value_t = 0.05)]
    step: f64,
}

/// What a key does to the command.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Key {
    /// Add to (forward, lateral, yaw).
    Nudge([f64; 3]),
    /// Back to zero: the robot stands.
    Zero,
    /// Send the stop and quit.
    Stop,
    /// Send the e-stop and quit.
    EStop,
    Ignore,
}

/// The keyboard map: w/s or arrows up/down forward, a/d or arrows left/right yaw, q/e lateral,
/// space zero, x stop, ! e-stop, Esc or Ctrl-C stop.
pub fn key(k: &KeyEvent, step: f64) -> Key {
    if k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char('c') {
        return Key::Stop;
    }
    match k.code {
        KeyCode::Up | KeyCode::Char('w') => Key::Nudge([step, 0.0, 0.0]),
        KeyCode::Down | KeyCode::Char('s') => Key::Nudge([-step, 0.0, 0.0]),
        KeyCode::Left | KeyCode::Char('a') => Key::Nudge([0.0, 0.0, 2.0 * step]),
        KeyCode::Right | KeyCode::Char('d') => Key::Nudge([0.0, 0.0, -2.0 * step]),
        KeyCode::Char('q') => Key::Nudge([0.0, step, 0.0]),
        KeyCode::Char('e') => Key::Nudge([0.0, -step, 0.0]),
        KeyCode::Char(' ') => Key::Zero,
        KeyCode::Char('x') | KeyCode::Esc => Key::Stop,
        KeyCode::Char('!') => Key::EStop,
        _ => Key::Ignore,
    }
}

struct Sender {
    socket: UdpSocket,
    to: std::net::SocketAddr,
    seq: u32,
}

impl Sender {
    fn new(to: &str) -> Result<Self> {
        let to = to
            .to_socket_addrs()
            .with_context(|| format!("--to {to:?}: not a host and port (e.g. robot.local:9870)"))?
            .next()
            .with_context(|| format!("--to {to:?}: no address"))?;
        let socket = UdpSocket::bind(if to.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" })?;
        Ok(Self { socket, to, seq: 0 })
    }

    fn send(&mut self, v: [f64; 3], flags: u8) -> Result<()> {
        self.seq += 1;
        let d = Datagram {
            seq: self.seq,
            flags,
            velocity: v.map(|x| x as f32),
        };
        self.socket
            .send_to(&d.encode(), self.to)
            .with_context(|| format!("sending to {}", self.to))?;
        Ok(())
    }
}

pub fn run(a: Args) -> Result<()> {
    anyhow::ensure!(
        a.rate.is_finite() && (1.0..=200.0).contains(&a.rate),
        "--rate {}: from 1 to 200 datagrams per second",
        a.rate
    );
    let mut sender = Sender::new(&a.to)?;
    let fixed = [a.forward, a.lateral, a.yaw];
    if fixed.iter().any(Option::is_some) || a.seconds.is_some() {
        let seconds = a
            .seconds
            .context("a fixed command needs --seconds (how long to send it)")?;
        return scripted(
            &mut sender,
            fixed.map(|v| v.unwrap_or(0.0)),
            seconds,
            a.rate,
        );
    }
    if !std::io::stdin().is_terminal() {
        bail!(
            "the keyboard needs a terminal; for a script, give --forward/--lateral/--yaw and --seconds"
        );
    }
    keyboard(&mut sender, a.rate, a.step)
}

fn scripted(sender: &mut Sender, v: [f64; 3], seconds: f64, rate: f64) -> Result<()> {
    anyhow::ensure!(
        v.iter().all(|x| x.is_finite()) && seconds.is_finite() && seconds >= 0.0,
        "the command and --seconds must be finite numbers"
    );
    let period = Duration::from_secs_f64(1.0 / rate);
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < Duration::from_secs_f64(seconds) {
        sender.send(v, 0)?;
        n += 1;
        std::thread::sleep(period);
    }
    println!(
        "sent {n} datagrams to {}: forward {:+.2} m/s, lateral {:+.2} m/s, yaw {:+.2} rad/s \
         (the runtime stops the robot once they stop coming)",
        sender.to, v[0], v[1], v[2]
    );
    Ok(())
}

fn keyboard(sender: &mut Sender, rate: f64, step: f64) -> Result<()> {
    eprintln!(
        "teleop -> {}: w/s forward, a/d turn, q/e sideways, space zero, x or Esc stop, ! e-stop",
        sender.to
    );
    crossterm::terminal::enable_raw_mode().context("the terminal's raw mode")?;
    let result = keyboard_loop(sender, rate, step);
    let _ = crossterm::terminal::disable_raw_mode();
    eprintln!();
    result
}

fn keyboard_loop(sender: &mut Sender, rate: f64, step: f64) -> Result<()> {
    let period = Duration::from_secs_f64(1.0 / rate);
    let mut v = [0.0f64; 3];
    let mut next = Instant::now();
    loop {
        let wait = next.saturating_duration_since(Instant::now());
        if event::poll(wait)? {
            if let Event::Key(k) = event::read()? {
                match key(&k, step) {
                    Key::Nudge(d) => (0..3).for_each(|i| v[i] += d[i]),
                    Key::Zero => v = [0.0; 3],
                    Key::Stop => {
                        sender.send([0.0; 3], FLAG_STOP)?;
                        eprint!("\r\nsent the stop");
                        return Ok(());
                    }
                    Key::EStop => {
                        sender.send([0.0; 3], FLAG_ESTOP)?;
                        eprint!("\r\nsent the e-stop");
                        return Ok(());
                    }
                    Key::Ignore => {}
                }
            }
            continue;
        }
        sender.send(v, 0)?;
        next += period;
        let mut err = std::io::stderr();
        let _ = write!(
            err,
            "\rforward {:+.2} m/s  lateral {:+.2} m/s  yaw {:+.2} rad/s  (datagram {})   ",
            v[0], v[1], v[2], sender.seq
        );
        let _ = err.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyEventKind;

    fn k(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent {
            code,
            modifiers,
            kind: KeyEventKind::Press,
            state: crossterm::event::KeyEventState::NONE,
        }
    }

    #[test]
    fn the_keyboard_map() {
        let none = KeyModifiers::NONE;
        assert_eq!(key(&k(KeyCode::Up, none), 0.1), Key::Nudge([0.1, 0.0, 0.0]));
        assert_eq!(
            key(&k(KeyCode::Char('s'), none), 0.1),
            Key::Nudge([-0.1, 0.0, 0.0])
        );
        assert_eq!(
            key(&k(KeyCode::Char('a'), none), 0.1),
            Key::Nudge([0.0, 0.0, 0.2])
        );
        assert_eq!(
            key(&k(KeyCode::Char('e'), none), 0.1),
            Key::Nudge([0.0, -0.1, 0.0])
        );
        assert_eq!(key(&k(KeyCode::Char(' '), none), 0.1), Key::Zero);
        assert_eq!(key(&k(KeyCode::Esc, none), 0.1), Key::Stop);
        assert_eq!(
            key(&k(KeyCode::Char('c'), KeyModifiers::CONTROL), 0.1),
            Key::Stop
        );
        assert_eq!(key(&k(KeyCode::Char('!'), none), 0.1), Key::EStop);
        assert_eq!(key(&k(KeyCode::Char('z'), none), 0.1), Key::Ignore);
    }
}

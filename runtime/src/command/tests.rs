use super::*;

fn guard() -> CommandGuard {
    CommandGuard::new(CommandLimits {
        ranges: [[-0.3, 0.6], [-0.3, 0.3], [-1.0, 1.0]],
        max_rate: [1.0, 1.0, 2.0],
        timeout_s: 0.2,
        stop_after_s: 0.3,
        rate_hz: 50.0,
    })
}

/// Runs `n` periods, returning the last output.
fn run(g: &mut CommandGuard, n: usize) -> Guarded {
    (0..n).map(|_| g.step()).last().unwrap()
}

#[test]
fn commands_are_clipped_to_the_trained_ranges() {
    let mut g = guard();
    g.push(Input::Velocity([2.0, -1.0, 5.0]));
    let out = run(&mut g, 5);
    assert_eq!(out.request, None);
    // 5 periods at 1 m/s^2: 0.1 m/s so far, heading for the clipped 0.6.
    assert!((out.command[0] - 0.1).abs() < 1e-12, "{out:?}");
    g.push(Input::Velocity([2.0, -1.0, 5.0]));
    let out = run(&mut g, 1);
    g.push(Input::Velocity([2.0, -1.0, 5.0]));
    let out2 = run(&mut g, 1);
    assert!(out2.command[0] > out.command[0]);
    for _ in 0..100 {
        g.push(Input::Velocity([2.0, -1.0, 5.0]));
        g.step();
    }
    g.push(Input::Velocity([2.0, -1.0, 5.0]));
    assert_eq!(g.step().command, [0.6, -0.3, 1.0]);
}

#[test]
fn the_command_changes_at_most_max_rate_per_second() {
    let mut g = guard();
    let mut last = [0.0; 3];
    for _ in 0..20 {
        g.push(Input::Velocity([0.5, 0.0, -1.0]));
        let c = g.step().command;
        assert!((c[0] - last[0]).abs() <= 1.0 / 50.0 + 1e-12);
        assert!((c[2] - last[2]).abs() <= 2.0 / 50.0 + 1e-12);
        last = c;
    }
    assert!((last[2] - -0.8).abs() < 1e-9, "{last:?}");
}

#[test]
fn a_silent_source_stands_the_robot_then_stops_it() {
    let mut g = guard();
    for _ in 0..50 {
        g.push(Input::Velocity([0.3, 0.0, 0.0]));
        g.step();
    }
    assert!((g.step().command[0] - 0.3).abs() < 1e-12);
    // Silent from here: 10 periods (0.2 s) keep the command, then it ramps to zero.
    let mut stood_at = None;
    let mut stop_at = None;
    for n in 1..=60 {
        let out = g.step();
        if stood_at.is_none() && out.command == [0.0; 3] {
            stood_at = Some(n);
        }
        if stop_at.is_none() && out.request == Some(Request::Stop) {
            stop_at = Some(n);
        }
    }
    // The step above was silent period 1, so loop period n is silent period n + 1. The ramp
    // down starts in silent period 10 (0.2 s after the last command), and 0.3 m/s at 1 m/s^2
    // reaches zero 15 periods on, in silent period 24 (n = 23): the robot stands 0.48 s after
    // the stream stopped. The stop follows 0.3 s after the timeout, in silent period 25.
    assert_eq!(stood_at, Some(23));
    assert_eq!(stop_at, Some(24));
}

#[test]
fn a_lost_source_requests_the_stop_at_once() {
    let mut g = guard();
    g.push(Input::Velocity([0.3, 0.0, 0.0]));
    g.step();
    g.push(Input::Lost);
    let out = g.step();
    assert_eq!(out.request, Some(Request::Stop));
    assert!(out.command[0] < 0.3);
}

#[test]
fn the_estop_latches_until_cleared_deliberately() {
    let mut g = guard();
    g.push(Input::EStop);
    for _ in 0..5 {
        // Fresh commands do not clear it.
        g.push(Input::Velocity([0.3, 0.0, 0.0]));
        let out = g.step();
        assert_eq!(out.request, Some(Request::EStop));
        assert_eq!(out.command, [0.0; 3]);
    }
    g.clear_estop();
    g.push(Input::Velocity([0.3, 0.0, 0.0]));
    assert_eq!(g.step().request, None);
}

#[test]
fn a_non_finite_command_is_refused_and_is_not_fresh() {
    let mut g = guard();
    g.push(Input::Velocity([0.3, 0.0, 0.0]));
    g.step();
    for _ in 0..40 {
        g.push(Input::Velocity([f64::NAN, 0.0, 0.0]));
        let c = g.step().command;
        assert!(c.iter().all(|x| x.is_finite()));
    }
    assert_eq!(g.refused(), 40);
    // 40 periods of NaN are 40 periods of silence: past the timeout, standing.
    assert_eq!(g.step().command, [0.0; 3]);
}

mod datagram_bytes {
    use super::super::Input;
    use super::super::datagram::*;

    #[test]
    fn a_datagram_is_24_little_endian_bytes() {
        let d = Datagram {
            seq: 0x0102_0304,
            flags: 0,
            velocity: [0.5, -0.25, 1.0],
        };
        let b = d.encode();
        assert_eq!(
            b,
            [
                b'C', b'L', b'W', b'C', 1, 0, 0, 0, 0x04, 0x03, 0x02, 0x01, // header, seq
                0x00, 0x00, 0x00, 0x3f, // 0.5
                0x00, 0x00, 0x80, 0xbe, // -0.25
                0x00, 0x00, 0x80, 0x3f, // 1.0
            ]
        );
        assert_eq!(Datagram::decode(&b).unwrap(), d);
        assert_eq!(d.input(), Input::Velocity([0.5, -0.25, 1.0]));
    }

    #[test]
    fn malformed_datagrams_are_refused_naming_why() {
        let good = Datagram {
            seq: 1,
            flags: 0,
            velocity: [0.0; 3],
        }
        .encode();
        assert_eq!(
            Datagram::decode(&good[..23]),
            Err(DatagramError::Length(23))
        );
        let mut b = good;
        b[0] = b'X';
        assert_eq!(Datagram::decode(&b), Err(DatagramError::Magic));
        let mut b = good;
        b[4] = 2;
        assert_eq!(Datagram::decode(&b), Err(DatagramError::Version(2)));
        let mut b = good;
        b[5] = 0x80;
        assert_eq!(Datagram::decode(&b), Err(DatagramError::Flags(0x80)));
        let mut b = good;
        b[5] = FLAG_ESTOP | FLAG_STOP;
        assert_eq!(Datagram::decode(&b).unwrap().input(), Input::EStop);
    }
}

mod gamepad_events {
    use std::io::Write;

    use super::super::Input;
    use super::super::gamepad::*;

    fn map() -> GamepadMap {
        GamepadMap {
            axes: [1, 0, 3],
            deadzone: 0.1,
            stop_button: 1,
            estop_button: 0,
            ranges: [[-0.2, 0.4], [-0.3, 0.3], [-0.8, 1.0]],
        }
    }

    fn axis(number: u8, value: i16) -> Event {
        Event {
            time_ms: 0,
            value,
            kind: JS_EVENT_AXIS,
            number,
        }
    }

    fn button(number: u8, value: i16) -> Event {
        Event {
            time_ms: 0,
            value,
            kind: JS_EVENT_BUTTON,
            number,
        }
    }

    fn close(a: [f64; 3], b: [f64; 3]) -> bool {
        a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-12)
    }

    #[test]
    fn an_event_is_8_little_endian_bytes_and_init_is_an_ordinary_event() {
        let b = [0x04, 0x03, 0x02, 0x01, 0x01, 0x80, 0x82, 0x03];
        let e = Event::decode(&b);
        assert_eq!(
            e,
            Event {
                time_ms: 0x0102_0304,
                value: -32767,
                kind: JS_EVENT_AXIS,
                number: 3,
            }
        );
        assert_eq!(axis(3, -32767).encode()[4..6], b[4..6]);
        let mut d = Decoder::new(map());
        let mut out = Vec::new();
        d.event(e, &mut out);
        assert!(out.is_empty());
        // Axis 3 is yaw: pushed left (negative) at full scale, the yaw range's high end.
        assert!(close(d.velocity(), [0.0, 0.0, 1.0]), "{:?}", d.velocity());
    }

    #[test]
    fn sticks_scale_to_the_ranges_with_left_and_forward_positive() {
        let mut d = Decoder::new(map());
        let mut out = Vec::new();
        // Left stick up, full: forward at the range's high end; down: its low end.
        d.event(axis(1, -32767), &mut out);
        assert!(close(d.velocity(), [0.4, 0.0, 0.0]), "{:?}", d.velocity());
        d.event(axis(1, 32767), &mut out);
        assert!(close(d.velocity(), [-0.2, 0.0, 0.0]), "{:?}", d.velocity());
        // -32768 is full scale too, not beyond it.
        d.event(axis(1, -32768), &mut out);
        assert!(close(d.velocity(), [0.4, 0.0, 0.0]), "{:?}", d.velocity());
        d.event(axis(1, 0), &mut out);
        // Left stick left: lateral left, positive; right stick right: yaw right, negative.
        d.event(axis(0, -32767), &mut out);
        d.event(axis(3, 32767), &mut out);
        assert!(close(d.velocity(), [0.0, 0.3, -0.8]), "{:?}", d.velocity());
        // Axes that are not mapped (the right stick's up/down, the triggers) change nothing.
        d.event(axis(2, -32767), &mut out);
        d.event(axis(4, -32767), &mut out);
        assert!(close(d.velocity(), [0.0, 0.3, -0.8]), "{:?}", d.velocity());
        assert!(out.is_empty());
    }

    #[test]
    fn the_dead_zone_reads_zero_and_the_rest_is_rescaled_from_its_edge() {
        let mut d = Decoder::new(map());
        let mut out = Vec::new();
        // 9 % of full scale: inside the 10 % dead zone.
        d.event(axis(1, -2949), &mut out);
        d.event(axis(0, 3000), &mut out);
        assert_eq!(d.velocity(), [0.0; 3]);
        // 55 % forward: half way from the dead zone's edge to full scale.
        d.event(axis(1, (-0.55 * 32767.0) as i16), &mut out);
        let v = d.velocity()[0];
        assert!((v - 0.2).abs() < 1e-4, "{v}");
    }

    #[test]
    fn buttons_stop_and_estop_when_pressed() {
        let mut d = Decoder::new(map());
        let mut out = Vec::new();
        d.event(button(1, 1), &mut out);
        d.event(button(1, 0), &mut out);
        d.event(button(5, 1), &mut out);
        d.event(button(0, 1), &mut out);
        d.event(button(0, 0), &mut out);
        assert_eq!(out, [Input::Stop, Input::EStop]);
        // The driver's initial state of a held e-stop button is an e-stop.
        let mut b = button(0, 1).encode();
        b[6] |= JS_EVENT_INIT;
        out.clear();
        d.event(Event::decode(&b), &mut out);
        assert_eq!(out, [Input::EStop]);
    }

    /// A FIFO in a temporary folder, as a stand-in for `/dev/input/js0`.
    fn fifo(dir: &std::path::Path) -> std::path::PathBuf {
        let p = dir.join("js0");
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        p
    }

    #[test]
    fn partial_events_wait_for_their_rest_and_eof_is_lost_only_after_an_event() {
        let dir = tempfile::tempdir().unwrap();
        let path = fifo(dir.path());
        let mut src = GamepadSource::open(&path, map()).unwrap();
        let mut out = Vec::new();
        // No writer yet: end of file, but nothing was ever delivered: nothing, not lost.
        src.poll(&mut out);
        src.poll(&mut out);
        assert!(out.is_empty() && !src.gone(), "{out:?}");
        let mut w = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        // Writer open, nothing written: would block, nothing new.
        src.poll(&mut out);
        assert!(out.is_empty(), "{out:?}");
        // One whole event and 3 bytes of the next.
        let fwd = axis(1, -32767).encode();
        let stop = button(1, 1).encode();
        w.write_all(&fwd).unwrap();
        w.write_all(&stop[..3]).unwrap();
        src.poll(&mut out);
        assert_eq!(out, [Input::Velocity([0.4, 0.0, 0.0])]);
        // Held still: the same velocity every poll.
        out.clear();
        src.poll(&mut out);
        assert_eq!(out, [Input::Velocity([0.4, 0.0, 0.0])]);
        // The rest of the stop button arrives.
        out.clear();
        w.write_all(&stop[3..]).unwrap();
        src.poll(&mut out);
        assert_eq!(out, [Input::Stop, Input::Velocity([0.4, 0.0, 0.0])]);
        // Unplugged (the writer closes): lost, and lost at every poll after.
        drop(w);
        out.clear();
        src.poll(&mut out);
        src.poll(&mut out);
        assert_eq!(out, [Input::Lost, Input::Lost]);
        assert!(src.gone());
    }
}

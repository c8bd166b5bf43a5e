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

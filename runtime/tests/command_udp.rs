//! The network command source over a real UDP socket on localhost: what arrives, in order,
//! and what is dropped (malformed, late, repeated).
use std::net::UdpSocket;

use clawrl_runtime::command::Input;
use clawrl_runtime::command::datagram::{Datagram, FLAG_ESTOP};
use clawrl_runtime::command::udp::UdpSource;

fn send(to: std::net::SocketAddr, bytes: &[u8]) {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.send_to(bytes, to).unwrap();
}

/// Polls until `n` inputs arrived (the kernel delivers localhost datagrams at once, but not
/// necessarily before `send_to` returns).
fn poll(src: &mut UdpSource, n: usize) -> Vec<Input> {
    let mut got = Vec::new();
    for _ in 0..200 {
        src.poll(&mut got).unwrap();
        if got.len() >= n {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    got
}

#[test]
fn datagrams_become_inputs_and_bad_ones_are_dropped() {
    let mut src = UdpSource::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let to = src.local_addr().unwrap();
    let d = |seq, flags, v: [f32; 3]| {
        Datagram {
            seq,
            flags,
            velocity: v,
        }
        .encode()
    };
    send(to, &d(5, 0, [0.3, 0.0, 0.0]));
    send(to, b"not a command");
    send(to, &d(4, 0, [9.0, 9.0, 9.0])); // late: older than 5
    send(to, &d(5, 0, [9.0, 9.0, 9.0])); // repeated
    send(to, &d(6, 0, [0.0, 0.0, 0.5]));
    send(to, &d(7, FLAG_ESTOP, [0.0; 3]));
    let got = poll(&mut src, 3);
    assert_eq!(
        got,
        vec![
            Input::Velocity([0.30000001192092896, 0.0, 0.0]),
            Input::Velocity([0.0, 0.0, 0.5]),
            Input::EStop
        ]
    );
    assert_eq!(src.dropped, 3);
    // Nothing waiting: poll returns at once with nothing.
    let mut none = Vec::new();
    src.poll(&mut none).unwrap();
    assert!(none.is_empty());
}

//! Arbitrary bytes into the streaming decoder: it must never panic, and every packet it hands
//! out that parses as a command must survive encode -> decode -> parse unchanged.
#![no_main]

use clawrl_protocol::{Command, Decoder};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut decoder: Decoder<512> = Decoder::new();
    for &b in data {
        decoder.push(b);
        while let Some(event) = decoder.next_event() {
            let Ok(packet) = event else { continue };
            let Ok(command) = Command::parse(&packet) else {
                continue;
            };
            let mut buf = [0u8; 1200];
            let n = command
                .encode(packet.id, &mut buf)
                .expect("re-encoding fits");
            let mut again: Decoder<1200> = Decoder::new();
            let mut seen = 0;
            for &c in &buf[..n] {
                again.push(c);
                while let Some(e) = again.next_event() {
                    let p = e.expect("re-encoded packet decodes");
                    assert_eq!(p.id, packet.id);
                    assert_eq!(Command::parse(&p).unwrap(), command);
                    seen += 1;
                }
            }
            assert_eq!(seen, 1);
        }
    }
    assert!(decoder.pending() <= 512);
});

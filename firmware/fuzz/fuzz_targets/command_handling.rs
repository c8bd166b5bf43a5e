//! Fuzz input -> a stream of packets with valid CRCs (so the fuzzer reaches the handler instead
//! of stopping at the CRC) mixed with raw garbage, fed through the decoder into the firmware's
//! controller with control ticks in between. Whatever arrives, it must not panic, every pulse
//! must command an angle inside the servo's hard limits, and no output may move more than one
//! slew step per tick.
#![no_main]

use clawrl_firmware::hal::ServoSample;
use clawrl_firmware::imu::ImuSample;
use clawrl_firmware::{Controller, FirmwareConfig, Sensors};
use clawrl_protocol::{Decoder, PacketWriter};

/// Instruction bytes the fuzzer picks from (plus any raw byte).
const INSTRUCTIONS: [u8; 13] = [
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x08, 0x10, 0x55, 0x82, 0x83, 0x8A, 0x92,
];
/// IDs the fuzzer picks from: servos, the board, broadcast, and one not on the board.
const IDS: [u8; 4] = [100, 0xFE, 42, 0];

/// Turns the fuzz input into wire bytes: chunks `len, id, instruction, params...` become
/// packets; a chunk with the top bit of `len` set goes out raw.
fn wire_bytes(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = input;
    while let Some((&len, tail)) = rest.split_first() {
        let n = ((len & 0x7F) as usize).min(tail.len());
        let (chunk, next) = tail.split_at(n);
        rest = next;
        if len & 0x80 != 0 || chunk.len() < 2 {
            out.extend_from_slice(chunk);
            continue;
        }
        let id = match chunk[0] {
            b @ 1..=16 => b,
            b if b < 32 => IDS[b as usize % IDS.len()],
            b => b,
        };
        let instruction = if chunk[1] < 0xF0 {
            INSTRUCTIONS[chunk[1] as usize % INSTRUCTIONS.len()]
        } else {
            chunk[1]
        };
        let mut buf = [0u8; 600];
        let mut w = PacketWriter::with_raw_instruction(&mut buf, id, instruction);
        w.push(&chunk[2..]);
        if let Ok(n) = w.finish() {
            out.extend_from_slice(&buf[..n]);
        }
    }
    out
}
use libfuzzer_sys::fuzz_target;

fn sensors(config: &FirmwareConfig, temperature: f32, supply_mv: u16) -> Sensors {
    let mut servos = [ServoSample {
        position_rad: 0.0,
        current_ma: 100.0,
        temperature_c: temperature,
    }; 16];
    for (s, c) in servos.iter_mut().zip(&config.servos) {
        s.position_rad = 0.5 * (c.min_rad + c.max_rad);
    }
    Sensors {
        servos,
        imu: Ok(ImuSample {
            gyro_rad_s: [0.0; 3],
            accel_m_s2: [0.0, 0.0, 9.81],
        }),
        supply_mv,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&knobs, input)) = data.split_first() else {
        return;
    };
    let stream = wire_bytes(input);
    let config = FirmwareConfig::claw_foot();
    let mut controller = Controller::new(config.clone());
    let hot = if knobs & 0x80 != 0 { 90.0 } else { 35.0 };
    let supply = if knobs & 0x40 != 0 { 5000 } else { 7400 };
    let sensors = sensors(&config, hot, supply);
    controller.tick(0, &sensors);
    controller.finish_boot();
    // A tick after every packet and every 64 bytes of anything; ticks 1-16 ms apart, or 40 ms
    // to reach the watchdog quickly.
    let tick_ms = if knobs & 0x20 != 0 {
        40
    } else {
        1 + (knobs & 0x0F) as u64
    };
    // The slew limit is per tick, whatever the time between ticks: late ticks move slower.
    let step = config.max_step_rad() + 1e-4;
    let mut decoder: Decoder<1024> = Decoder::new();
    let mut now = 0u64;
    let mut last = [None::<f32>; 16];
    for (i, &b) in stream.iter().enumerate() {
        decoder.push(b);
        let mut packets = 0;
        while let Some(event) = decoder.next_event() {
            if let Ok(packet) = event {
                controller.handle(&packet, now, &mut |reply| assert!(reply.len() >= 11));
                packets += 1;
            }
        }
        if packets > 0 || i % 64 == 63 {
            now += tick_ms * 1000;
            let pulses = controller.tick(now, &sensors);
            for (s, pulse) in pulses.iter().enumerate() {
                let Some(p) = pulse else {
                    last[s] = None;
                    continue;
                };
                let limits = &config.servos[s];
                let angle = limits.calibration.angle_rad(*p);
                assert!(
                    angle >= limits.min_rad - 1e-3 && angle <= limits.max_rad + 1e-3,
                    "servo {s} at {angle}"
                );
                if let Some(prev) = last[s] {
                    assert!(
                        (angle - prev).abs() <= step,
                        "servo {s} jumped {prev} -> {angle}"
                    );
                }
                last[s] = Some(angle);
            }
        }
    }
});

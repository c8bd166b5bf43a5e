//! Arbitrary bytes as the serial stream into the firmware's controller, with control ticks in
//! between: whatever arrives, it must not panic, every pulse must command an angle inside the
//! servo's hard limits, and no output may move more than one slew step per tick.
#![no_main]

use clawrl_firmware::hal::ServoSample;
use clawrl_firmware::imu::ImuSample;
use clawrl_firmware::{Controller, FirmwareConfig, Sensors};
use clawrl_protocol::Decoder;
use libfuzzer_sys::fuzz_target;

fn sensors(config: &FirmwareConfig, temperature: f32, supply_mv: u16) -> Sensors {
    let mut servos = [ServoSample { position_rad: 0.0, current_ma: 100.0, temperature_c: temperature }; 16];
    for (s, c) in servos.iter_mut().zip(&config.servos) {
        s.position_rad = 0.5 * (c.min_rad + c.max_rad);
    }
    Sensors { servos, imu: Ok(ImuSample { gyro_rad_s: [0.0; 3], accel_m_s2: [0.0, 0.0, 9.81] }), supply_mv }
}

fuzz_target!(|data: &[u8]| {
    let Some((&knobs, stream)) = data.split_first() else { return };
    let config = FirmwareConfig::claw_foot();
    let mut controller = Controller::new(config.clone());
    let hot = if knobs & 0x80 != 0 { 90.0 } else { 35.0 };
    let supply = if knobs & 0x40 != 0 { 5000 } else { 7400 };
    let sensors = sensors(&config, hot, supply);
    controller.tick(0, &sensors);
    controller.finish_boot();
    // A tick every `spacing` bytes, 1 ms apart (sometimes 40 ms, to reach the watchdog).
    let spacing = 1 + (knobs & 0x0F) as usize;
    let step = config.max_step_rad() + 1e-4;
    let mut decoder: Decoder<1024> = Decoder::new();
    let mut now = 0u64;
    let mut last = [None::<f32>; 16];
    for (i, &b) in stream.iter().enumerate() {
        decoder.push(b);
        while let Some(event) = decoder.next_event() {
            if let Ok(packet) = event {
                controller.handle(&packet, now, &mut |reply| assert!(reply.len() >= 11));
            }
        }
        if i % spacing == 0 {
            now += if knobs & 0x20 != 0 { 40_000 } else { 1_000 };
            let pulses = controller.tick(now, &sensors);
            for (s, pulse) in pulses.iter().enumerate() {
                let Some(p) = pulse else {
                    last[s] = None;
                    continue;
                };
                let limits = &config.servos[s];
                let angle = limits.calibration.angle_rad(*p);
                assert!(angle >= limits.min_rad - 1e-3 && angle <= limits.max_rad + 1e-3, "servo {s} at {angle}");
                if let Some(prev) = last[s] {
                    assert!((angle - prev).abs() <= step, "servo {s} jumped {prev} -> {angle}");
                }
                last[s] = Some(angle);
            }
        }
    }
});

//! Link budget and packet costs. For one control cycle of the whole robot (goals to all 16
//! servos, present state of all 16 and the IMU back) it counts the real bytes on the wire, as
//! encoded by clawrl-protocol and answered by the firmware's controller, and turns them into
//! time and the highest control rate at 1 and 4 Mbaud. Then it times encode, decode and the
//! firmware's handling per packet.
//!
//! Run: `cargo bench -p clawrl-firmware --bench link_budget`

use clawrl_firmware::hal::ServoSample;
use clawrl_firmware::imu::ImuSample;
use clawrl_firmware::{Controller, FirmwareConfig, Sensors};
use clawrl_protocol::command::{SyncRead, SyncWrite};
use clawrl_protocol::table::{board, servo};
use clawrl_protocol::{Command, Decoder};
use std::hint::black_box;
use std::time::Instant;

/// One instruction and what the board answers to it.
struct Exchange {
    name: &'static str,
    request: Vec<u8>,
    response: Vec<u8>,
}

fn controller() -> Controller {
    let config = FirmwareConfig::claw_foot();
    let mut c = Controller::new(config.clone());
    let mut servos = [ServoSample {
        position_rad: 0.0,
        current_ma: 120.0,
        temperature_c: 35.0,
    }; 16];
    for (s, cfg) in servos.iter_mut().zip(&config.servos) {
        s.position_rad = 0.5 * (cfg.min_rad + cfg.max_rad);
    }
    let imu = Ok(ImuSample {
        gyro_rad_s: [0.01, -0.02, 0.0],
        accel_m_s2: [0.1, 0.0, 9.8],
    });
    c.tick(
        0,
        &Sensors {
            servos,
            imu,
            supply_mv: 7400,
        },
    );
    c.finish_boot();
    c
}

fn exchange(c: &mut Controller, name: &'static str, id: u8, command: Command<'_>) -> Exchange {
    let mut buf = [0u8; 1024];
    let n = command.encode(id, &mut buf).unwrap();
    let request = buf[..n].to_vec();
    let mut response = Vec::new();
    let mut decoder: Decoder<1024> = Decoder::new();
    for &b in &request {
        decoder.push(b);
        while let Some(Ok(p)) = decoder.next_event() {
            c.handle(&p, 1, &mut |bytes| response.extend_from_slice(bytes));
        }
    }
    Exchange {
        name,
        request,
        response,
    }
}

fn goals_raw() -> Vec<u8> {
    (1..=16u8)
        .flat_map(|id| std::iter::once(id).chain(2048u32.to_le_bytes()))
        .collect()
}

fn cycles(c: &mut Controller) -> Vec<(&'static str, Vec<Exchange>)> {
    let raw = goals_raw();
    let ids: Vec<u8> = (1..=16).collect();
    let write = |c: &mut Controller| {
        let w = SyncWrite {
            address: servo::GOAL_POSITION,
            length: 4,
            raw: &raw,
        };
        exchange(c, "SYNC WRITE goal x16", 0xFE, Command::SyncWrite(w))
    };
    let imu_only = |c: &mut Controller| {
        exchange(
            c,
            "READ board IMU (80..100)",
            100,
            Command::Read {
                address: board::GYRO,
                length: 20,
            },
        )
    };
    let state = SyncRead {
        address: servo::PRESENT_STATE,
        length: servo::PRESENT_STATE_LEN,
        ids: &ids,
    };
    vec![
        (
            "A: sync write + one board READ of the robot state (recommended)",
            vec![
                write(c),
                exchange(
                    c,
                    "READ board 80..288",
                    100,
                    Command::Read {
                        address: board::ROBOT_STATE,
                        length: board::ROBOT_STATE_LEN,
                    },
                ),
            ],
        ),
        (
            "B: sync write + FAST SYNC READ of 126..136 x16 + IMU read (X-series style)",
            vec![
                write(c),
                exchange(c, "FAST SYNC READ x16", 0xFE, Command::FastSyncRead(state)),
                imu_only(c),
            ],
        ),
        (
            "C: sync write + SYNC READ of 126..136 x16 + IMU read (plain Protocol 2.0)",
            vec![
                write(c),
                exchange(c, "SYNC READ x16", 0xFE, Command::SyncRead(state)),
                imu_only(c),
            ],
        ),
    ]
}

/// Time to send `bytes` at `baud`, 10 bits per byte (start, 8 data, stop).
fn wire_us(bytes: usize, baud: f64) -> f64 {
    bytes as f64 * 10.0 / baud * 1e6
}

fn link_budget(c: &mut Controller) {
    println!("## Wire bytes per control cycle (16 servos + IMU)\n");
    println!(
        "| cycle | packets | bytes down | bytes up | total | 1 Mbaud | max rate | 4 Mbaud | max rate |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, exchanges) in cycles(c) {
        let down: usize = exchanges.iter().map(|e| e.request.len()).sum();
        let up: usize = exchanges.iter().map(|e| e.response.len()).sum();
        let packets = exchanges.len() + exchanges.iter().filter(|e| !e.response.is_empty()).count();
        let detail: Vec<String> = exchanges
            .iter()
            .map(|e| format!("{} {}+{}", e.name, e.request.len(), e.response.len()))
            .collect();
        let (t1, t4) = (wire_us(down + up, 1e6), wire_us(down + up, 4e6));
        println!(
            "| {name} | {packets} | {down} | {up} | {} | {t1:.0} us | {:.0} Hz | {t4:.0} us | {:.0} Hz |",
            down + up,
            1e6 / t1,
            1e6 / t4
        );
        println!("|   ({}) | | | | | | | | |", detail.join("; "));
    }
    println!();
}

/// Median ns per call of `f` over `rounds` rounds of `iters` calls.
fn time_ns(iters: u32, rounds: usize, mut f: impl FnMut()) -> f64 {
    let mut samples: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed().as_nanos() as f64 / iters as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[rounds / 2]
}

fn decode_all(bytes: &[u8]) -> usize {
    let mut decoder: Decoder<1024> = Decoder::new();
    let mut n = 0;
    for &b in bytes {
        decoder.push(b);
        while let Some(Ok(p)) = decoder.next_event() {
            n += p.params.len();
        }
    }
    n
}

fn packet_costs(c: &mut Controller) {
    let raw = goals_raw();
    let sync_write = Command::SyncWrite(SyncWrite {
        address: servo::GOAL_POSITION,
        length: 4,
        raw: &raw,
    });
    let mut buf = [0u8; 1024];
    let n = sync_write.encode(0xFE, &mut buf).unwrap();
    let sync_write_bytes = buf[..n].to_vec();
    let read_state = Command::Read {
        address: board::ROBOT_STATE,
        length: board::ROBOT_STATE_LEN,
    };
    let state = exchange(c, "", 100, read_state);
    let mut table = [0u8; 288];
    let status_data = &state.response[9..state.response.len() - 2];
    table[..status_data.len()].copy_from_slice(status_data);

    println!("## Cost per packet (host, median of 15 rounds)\n");
    println!("| operation | bytes | ns per packet |");
    println!("|---|---|---|");
    let rows: Vec<(&str, usize, f64)> = vec![
        (
            "encode SYNC WRITE goal x16",
            n,
            time_ns(20_000, 15, || {
                black_box(sync_write.encode(0xFE, black_box(&mut buf)).unwrap());
            }),
        ),
        (
            "decode SYNC WRITE goal x16",
            n,
            time_ns(20_000, 15, || {
                black_box(decode_all(black_box(&sync_write_bytes)));
            }),
        ),
        (
            "encode status, 208-byte robot state",
            state.response.len(),
            time_ns(20_000, 15, || {
                let mut out = [0u8; 1024];
                black_box(
                    clawrl_protocol::encode_status(&mut out, 100, 0, black_box(&table[..208]))
                        .unwrap(),
                );
            }),
        ),
        (
            "decode status, 208-byte robot state",
            state.response.len(),
            time_ns(20_000, 15, || {
                black_box(decode_all(black_box(&state.response)));
            }),
        ),
    ];
    for (name, bytes, ns) in rows {
        println!("| {name} | {bytes} | {ns:.0} |");
    }
    let handled = |c: &mut Controller, bytes: &[u8]| {
        let mut decoder: Decoder<1024> = Decoder::new();
        let mut sent = 0;
        for &b in bytes {
            decoder.push(b);
            while let Some(Ok(p)) = decoder.next_event() {
                c.handle(&p, 1, &mut |r| sent += r.len());
            }
        }
        sent
    };
    let read_bytes = {
        let n = read_state.encode(100, &mut buf).unwrap();
        buf[..n].to_vec()
    };
    let ns = time_ns(20_000, 15, || {
        black_box(handled(c, black_box(&sync_write_bytes)));
    });
    println!(
        "| firmware: decode + apply SYNC WRITE goal x16 | {} | {ns:.0} |",
        sync_write_bytes.len()
    );
    let ns = time_ns(20_000, 15, || {
        black_box(handled(c, black_box(&read_bytes)));
    });
    println!(
        "| firmware: decode READ + render + encode robot state | {} | {ns:.0} |",
        read_bytes.len()
    );
    println!();
}

/// Round trips of the recommended cycle through the virtual board on a pseudo-terminal: the
/// firmware's real loop and the OS, no baud-rate limit. Shows the software's share of a cycle.
fn pty_round_trips() {
    use clawrl_firmware::virtual_board::{ServoModel, VirtualBoard};
    use std::io::{Read, Write};
    let config = FirmwareConfig {
        watchdog_ms: 1000,
        ..FirmwareConfig::claw_foot()
    };
    let board = VirtualBoard::spawn_on_pty(config.clone(), ServoModel::new(&config)).unwrap();
    let mut port = serialport::new(board.path(), 1_000_000)
        .timeout(std::time::Duration::from_millis(200))
        .open_native()
        .unwrap();
    let raw = goals_raw();
    let mut request = vec![0u8; 256];
    let n = Command::SyncWrite(SyncWrite {
        address: servo::GOAL_POSITION,
        length: 4,
        raw: &raw,
    })
    .encode(0xFE, &mut request)
    .unwrap();
    let m = Command::Read {
        address: board::ROBOT_STATE,
        length: board::ROBOT_STATE_LEN,
    }
    .encode(100, &mut request[n..])
    .unwrap();
    request.truncate(n + m);
    let mut samples = Vec::new();
    let mut decoder: Decoder<1024> = Decoder::new();
    let mut chunk = [0u8; 512];
    for _ in 0..2000 {
        let t = Instant::now();
        port.write_all(&request).unwrap();
        let mut done = false;
        while !done {
            let got = port.read(&mut chunk).unwrap();
            for &b in &chunk[..got] {
                decoder.push(b);
                while let Some(event) = decoder.next_event() {
                    done |= matches!(event, Ok(p) if p.id == 100);
                }
            }
        }
        samples.push(t.elapsed().as_secs_f64() * 1e6);
    }
    samples.sort_by(f64::total_cmp);
    let q = |p: f64| samples[((samples.len() - 1) as f64 * p) as usize];
    println!("## Recommended cycle over the virtual board's pty (2000 cycles)\n");
    println!("| p50 | p90 | p99 | max |");
    println!("|---|---|---|---|");
    println!(
        "| {:.0} us | {:.0} us | {:.0} us | {:.0} us |",
        q(0.5),
        q(0.9),
        q(0.99),
        q(1.0)
    );
    println!();
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` would pass nothing else we need.
    let mut c = controller();
    link_budget(&mut c);
    packet_costs(&mut c);
    pty_round_trips();
}

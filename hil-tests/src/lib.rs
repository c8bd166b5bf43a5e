//! Hardware-in-the-loop tests: the same runtime and firmware that run on the robot, with the
//! MuJoCo model standing in for the body.
//!
//! The first thing such a loop needs is that the three layers describe one robot: the same
//! servos in the same order, with the same limits. [`servo_map`] lines up the simulated joints
//! with the firmware's servo table and its Dynamixel IDs; `tests/` checks them against each
//! other.
//!
//! The loop itself, one module per part:
//! - [`body`]: the simulator's quadruped as the board's plant (pulses in, sensors out);
//! - [`framer`]: the serial stream cut into packets;
//! - [`faults`]: what can go wrong on the line (off, stuck, garbage, lost packets, delays, a
//!   stall, a pulled cable), per window of simulated time;
//! - [`line`]: what the loops, scenarios and reference share (clocking, events, samples, the
//!   trace) and the runtime's end of the cable; a leaf;
//! - [`bridge`]: the runtime's pseudo-terminal, the faults, the board and the body in one
//!   thread, in lockstep or in real time;
//! - [`real_board`]: the same with a real microcontroller in HIL mode in place of the virtual
//!   board, over a real serial port;
//! - [`scenario`]: the runtime's own `run` against the bridge, scenario by scenario;
//! - [`reference`]: the same bundle in the simulator alone, and the walking figures both are
//!   compared by;
//! - [`report`]: the text and the path picture.
pub mod body;
pub mod bridge;
pub mod faults;
pub mod framer;
pub mod identify;
pub mod line;
pub mod real_board;
pub mod reference;
pub mod report;
pub mod scenario;
pub mod video;

use clawrl_firmware::config::FirmwareConfig;
use clawrl_protocol::units::ids;
use clawrl_sim::quadruped::Robot;

/// One servo as each layer sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServoMap {
    pub name: String,
    pub dynamixel_id: u8,
    /// Joint limits in the MuJoCo model (rad).
    pub sim_range: [f64; 2],
    /// Joint limits the firmware enforces (rad).
    pub firmware_range: [f32; 2],
}

/// The robot's servos in action order, with their ID and both layers' limits.
pub fn servo_map(robot: &Robot, firmware: &FirmwareConfig) -> Vec<ServoMap> {
    clawrl_sim::quadruped::servo_names()
        .into_iter()
        .enumerate()
        .map(|(i, name)| ServoMap {
            name,
            dynamixel_id: ids::servo_id(i),
            sim_range: robot.layout.servo_range[i],
            firmware_range: [firmware.servos[i].min_rad, firmware.servos[i].max_rad],
        })
        .collect()
}

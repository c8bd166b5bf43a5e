//! Dynamixel Protocol 2.0 wire format shared by the runtime and the firmware.
#![no_std]

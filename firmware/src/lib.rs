//! Claw-foot servo firmware core.
#![no_std]

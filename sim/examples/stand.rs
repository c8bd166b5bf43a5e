//! Stands the quadruped for 5 s and prints the report: `cargo run -p clawrl-sim --example stand`.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cfg = clawrl_sim::quadruped::TaskConfig::flat()?;
    print!("{}", clawrl_sim::quadruped::simulate_report(&cfg, 5.0, 1)?);
    let slopes = clawrl_sim::quadruped::TaskConfig::slopes()?;
    print!(
        "{}",
        clawrl_sim::quadruped::simulate_report(&slopes, 5.0, 2)?
    );
    Ok(())
}

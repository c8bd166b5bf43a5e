//! The fit: bounded Levenberg-Marquardt (the `levenberg-marquardt` crate) over each group's
//! servo parameters, the Jacobian by finite differences with its rollouts spread over the
//! cores; the latency searched over whole physics steps around it.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use levenberg_marquardt::{LeastSquaresProblem, LevenbergMarquardt};
use nalgebra::{DMatrix, DVector, Dyn, Owned};
use rayon::prelude::*;

use super::{Rig, ServoModel, Trace, TraceError};
use crate::quadruped::ServoDynamics;

#[derive(Debug, Clone, PartialEq)]
pub struct FitOptions {
    /// The share of each trace (its start) the fit sees; the rest is held out.
    pub train_share: f64,
    /// The range the latency is fitted in (physics steps).
    pub latency_steps: std::ops::RangeInclusive<usize>,
    /// Parameters held at the model's own value in every group (names from
    /// [`ServoDynamics::NAMES`]).
    pub frozen: Vec<String>,
    /// Each parameter may go this many times above or below its nominal value.
    pub bound: f64,
}

impl Default for FitOptions {
    fn default() -> Self {
        Self {
            train_share: 0.7,
            latency_steps: 0..=12,
            frozen: Vec::new(),
            bound: 5.0,
        }
    }
}

/// What a fit found, and how well each model predicts the held-out part.
#[derive(Debug, Clone)]
pub struct Fit {
    pub nominal: ServoModel,
    pub fitted: ServoModel,
    /// Per servo, the held-out position RMSE (rad) under the nominal and the fitted model.
    pub rmse_before: Vec<f64>,
    pub rmse_after: Vec<f64>,
    /// Rollouts of the whole training part the fit ran.
    pub rollouts: usize,
    pub seconds: f64,
}

/// Fits `rig`'s servo model to `traces` (each checked first).
pub fn fit(rig: &Rig, traces: &[Trace], opts: &FitOptions) -> Result<Fit, TraceError> {
    let start = Instant::now();
    let period = rig.physics_dt * rig.decimation as f64;
    for t in traces {
        t.check(rig.servo_names(), period)?;
    }
    for f in &opts.frozen {
        assert!(
            ServoDynamics::NAMES.contains(&f.as_str()),
            "no servo parameter named {f:?}"
        );
    }
    let nominal = rig.nominal();
    // A slow servo looks like a late one, and one leg joint's gain can stand in for its
    // neighbour's: the error has valleys. So the fit goes in two stages. First the gains and
    // the latency alone, from a few latencies across the range; then every parameter from
    // each place the first stage ended, the best kept.
    let rollouts = AtomicUsize::new(0);
    let (lo, hi) = (
        *opts.latency_steps.start() as f64,
        *opts.latency_steps.end() as f64,
    );
    let starts: &[f64] = if hi > lo { &LATENCY_STARTS } else { &[0.0] };
    let mut gains_only = opts.frozen.clone();
    gains_only.extend(["damping", "armature", "frictionloss"].map(String::from));
    let best = |a: &Problem, b: &Problem| {
        a.residuals
            .norm_squared()
            .total_cmp(&b.residuals.norm_squared())
    };
    let firsts: Vec<ServoModel> = starts
        .par_iter()
        .map(|&q| {
            let from = ServoModel {
                latency_steps: lo + q * (hi - lo),
                ..nominal.clone()
            };
            let p = Problem::new(rig, traces, opts, &nominal, &from, &gains_only, &rollouts);
            let p = p.minimized();
            p.model(&p.theta)
        })
        .collect();
    // Where the first stages ended apart (a quarter step or more), each goes on to the second:
    // the gains alone can prefer a latency the full model does not.
    let mut distinct: Vec<ServoModel> = Vec::new();
    for m in firsts {
        if distinct
            .iter()
            .all(|d| (d.latency_steps - m.latency_steps).abs() >= 0.25)
        {
            distinct.push(m);
        }
    }
    let p = distinct
        .par_iter()
        .map(|from| {
            Problem::new(rig, traces, opts, &nominal, from, &opts.frozen, &rollouts).minimized()
        })
        .min_by(best)
        .expect("at least one start");
    let fitted = p.model(&p.theta);
    let rollouts = rollouts.load(Ordering::Relaxed);
    Ok(Fit {
        rmse_before: held_out_rmse(rig, traces, &nominal, opts.train_share),
        rmse_after: held_out_rmse(rig, traces, &fitted, opts.train_share),
        nominal,
        fitted,
        rollouts,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Cycles of a trace the fit sees.
fn train_cycles(t: &Trace, share: f64) -> usize {
    ((t.len() as f64 * share) as usize).clamp(2, t.len())
}

/// Per servo, the RMSE (rad) of `model`'s prediction over the held-out end of every trace,
/// each replayed whole from its start.
pub fn held_out_rmse(rig: &Rig, traces: &[Trace], model: &ServoModel, share: f64) -> Vec<f64> {
    let n = rig.servo_names().len();
    let (mut sum, mut count) = (vec![0.0; n], 0usize);
    for t in traces {
        let sim = rig.simulate(t, model, t.len());
        let from = train_cycles(t, share);
        for (s, m) in sim.iter().zip(&t.measured).skip(from) {
            for ((acc, s), m) in sum.iter_mut().zip(s).zip(m) {
                *acc += (s - m).powi(2);
            }
            count += 1;
        }
    }
    sum.iter()
        .map(|s| (s / count.max(1) as f64).sqrt())
        .collect()
}

/// The least-squares problem: θ holds each free parameter's factor on its nominal value as
/// `exp(L tanh(θ / L))`, L = ln(bound): every parameter stays positive and inside the box
/// [nominal / bound, nominal x bound], smoothly (a clamp would leave LM a flat floor to stall
/// on), and near nominal a step of θ is a relative change of the parameter.
struct Problem<'a> {
    rig: &'a Rig,
    traces: &'a [Trace],
    share: f64,
    nominal: ServoModel,
    /// (group, parameter index) of each entry of θ.
    free: Vec<(usize, usize)>,
    bound: f64,
    /// The latency's range (physics steps): θ's last entry places it there.
    latency: (f64, f64),
    theta: DVector<f64>,
    residuals: DVector<f64>,
    rollouts: &'a AtomicUsize,
}

/// The `levenberg-marquardt` crate's patience: evaluations per parameter.
const PATIENCE: usize = 30;
/// Where in the latency's range the fits start.
const LATENCY_STARTS: [f64; 6] = [0.04, 0.12, 0.25, 0.4, 0.6, 0.85];

/// Step of the finite differences, in θ (a 0.5 % change of the parameter).
const FD_STEP: f64 = 5e-3;

impl<'a> Problem<'a> {
    /// The problem starting at `from`, every parameter but the `frozen` free; θ = 0 is
    /// `nominal`, the centre of the box.
    fn new(
        rig: &'a Rig,
        traces: &'a [Trace],
        opts: &FitOptions,
        nominal: &ServoModel,
        from: &ServoModel,
        frozen: &[String],
        rollouts: &'a AtomicUsize,
    ) -> Self {
        let free: Vec<(usize, usize)> = (0..nominal.groups.len())
            .flat_map(|g| (0..4).map(move |p| (g, p)))
            .filter(|&(_, p)| !frozen.iter().any(|f| f == ServoDynamics::NAMES[p]))
            .collect();
        let latency = (
            *opts.latency_steps.start() as f64,
            *opts.latency_steps.end() as f64,
        );
        let bound = opts.bound.ln();
        // θ of `from`: each transform of [`model`](Self::model) undone.
        let mut theta = DVector::zeros(free.len() + 1);
        for (j, &(g, p)) in free.iter().enumerate() {
            let factor = from.groups[g].to_array()[p] / nominal.groups[g].to_array()[p];
            theta[j] = bound * (factor.ln() / bound).clamp(-0.99, 0.99).atanh();
        }
        if latency.1 > latency.0 {
            let x = 2.0 * (from.latency_steps - latency.0) / (latency.1 - latency.0) - 1.0;
            theta[free.len()] = x.clamp(-0.99, 0.99).atanh();
        }
        let mut p = Self {
            rig,
            traces,
            share: opts.train_share,
            nominal: nominal.clone(),
            free,
            bound,
            latency,
            theta,
            residuals: DVector::zeros(0),
            rollouts,
        };
        p.residuals = p.residuals_at(&p.theta);
        p
    }

    /// The servo model at θ.
    fn model(&self, theta: &DVector<f64>) -> ServoModel {
        let mut m = self.nominal.clone();
        let (lo, hi) = self.latency;
        m.latency_steps = lo + (hi - lo) * 0.5 * (theta[self.free.len()].tanh() + 1.0);
        for (&(g, p), &t) in self.free.iter().zip(theta.iter()) {
            let mut a = m.groups[g].to_array();
            a[p] *= (self.bound * (t / self.bound).tanh()).exp();
            m.groups[g] = ServoDynamics::from_array(a);
        }
        m
    }

    /// Simulated minus measured angle, every servo, every training cycle but the first.
    fn residuals_at(&self, theta: &DVector<f64>) -> DVector<f64> {
        let model = self.model(theta);
        let mut r = Vec::new();
        for t in self.traces {
            let cycles = train_cycles(t, self.share);
            let sim = self.rig.simulate(t, &model, cycles);
            for (s, m) in sim.iter().zip(&t.measured).skip(1) {
                r.extend(s.iter().zip(m).map(|(s, m)| s - m));
            }
        }
        self.rollouts.fetch_add(1, Ordering::Relaxed);
        DVector::from_vec(r)
    }

    fn minimized(self) -> Self {
        // A first step of at most about one unit of θ (a factor of e): the default bound of
        // 100 throws the first trial far into the box's corners.
        let (p, _report) = LevenbergMarquardt::new()
            .with_patience(PATIENCE)
            .with_stepbound(1.0)
            .minimize(self);
        p
    }
}

impl LeastSquaresProblem<f64, Dyn, Dyn> for Problem<'_> {
    type ResidualStorage = Owned<f64, Dyn>;
    type JacobianStorage = Owned<f64, Dyn, Dyn>;
    type ParameterStorage = Owned<f64, Dyn>;

    fn set_params(&mut self, x: &DVector<f64>) {
        self.theta = x.clone();
        self.residuals = self.residuals_at(x);
    }

    fn params(&self) -> DVector<f64> {
        self.theta.clone()
    }

    fn residuals(&self) -> Option<DVector<f64>> {
        Some(self.residuals.clone())
    }

    fn jacobian(&self) -> Option<DMatrix<f64>> {
        let columns: Vec<DVector<f64>> = (0..self.theta.len())
            .into_par_iter()
            .map(|j| {
                let mut theta = self.theta.clone();
                theta[j] += FD_STEP;
                (self.residuals_at(&theta) - &self.residuals) / FD_STEP
            })
            .collect();
        Some(DMatrix::from_columns(&columns))
    }
}

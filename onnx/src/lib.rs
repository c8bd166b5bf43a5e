//! Export a student policy (observation normaliser + MLP) to ONNX, for users of other runtimes.
//!
//! The input is a plain description, [`MlpPolicy`], with no candle types. The graph reads
//! `obs` (float32 `[N, obs_dim]`, dynamic batch `N`) and writes `actions` (float32
//! `[N, action_dim]`):
//!
//! ```text
//! obs -> Sub(obs_mean) -> Mul(obs_inv_std) -> Clip(obs_clip_min, obs_clip_max)
//!     -> Gemm(layers.0.weight, layers.0.bias, transB=1) -> activation -> ... -> Gemm(last)
//!     -> [Slice first action_dim columns] -> [Tanh] -> actions
//! ```
//!
//! `obs_inv_std` is `1 / sqrt(var + epsilon)` computed in f64 and stored as f32. Opset 13.
//! The protobuf messages and their encoding come from the `onnx-rs` crate.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use onnx_rs::ast::{
    Attribute, AttributeType, DataType, Dimension, Graph, Model, Node, OpType, OperatorSetId,
    TensorProto, TensorShape, TensorShapeDimension, TensorTypeProto, TypeProto, TypeValue,
    ValueInfo,
};

/// ONNX opset the graph is written for (every op used is unchanged in later opsets).
pub const OPSET: i64 = 13;
/// ONNX IR version matching [`OPSET`] (ONNX 1.8).
const IR_VERSION: i64 = 7;

/// Name of the graph input, float32 `[N, obs_dim]`.
pub const INPUT_NAME: &str = "obs";
/// Name of the graph output, float32 `[N, action_dim]`.
pub const OUTPUT_NAME: &str = "actions";

/// Activation between hidden layers (none after the last layer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// ELU with alpha 1.
    Elu,
    Relu,
    Tanh,
}

/// A dense layer `y = W x + b`.
#[derive(Debug, Clone, PartialEq)]
pub struct Dense {
    /// `[outputs][inputs]`, row-major.
    pub weight: Vec<f32>,
    pub bias: Vec<f32>,
    pub inputs: usize,
    pub outputs: usize,
}

/// A normaliser followed by an MLP.
#[derive(Debug, Clone, PartialEq)]
pub struct MlpPolicy {
    pub obs_dim: usize,
    /// Normaliser: `z = clamp((x - mean) / sqrt(var + epsilon), -clip, clip)`.
    pub mean: Vec<f64>,
    pub var: Vec<f64>,
    pub epsilon: f64,
    pub clip: f32,
    pub layers: Vec<Dense>,
    pub activation: Activation,
    /// The last layer may have more outputs (e.g. mean and log-std): the first `action_dim` are
    /// the actions.
    pub action_dim: usize,
    /// Tanh on the output (SAC policies).
    pub squash: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum OnnxError {
    #[error("invalid policy: {0}")]
    Invalid(String),
    /// The OS error's text is in the message, so it is not also the `source()` (which an
    /// error chain would print again).
    #[error("cannot write {}: {err}", path.display())]
    Io { path: PathBuf, err: io::Error },
}

fn invalid(msg: impl Into<String>) -> OnnxError {
    OnnxError::Invalid(msg.into())
}

/// Checks every size and value the graph depends on.
pub fn validate(p: &MlpPolicy) -> Result<(), OnnxError> {
    if p.obs_dim == 0 || p.action_dim == 0 {
        return Err(invalid("obs_dim and action_dim must be positive"));
    }
    if p.mean.len() != p.obs_dim || p.var.len() != p.obs_dim {
        return Err(invalid(format!(
            "normaliser has {} means and {} variances for obs_dim {}",
            p.mean.len(),
            p.var.len(),
            p.obs_dim
        )));
    }
    all_finite("mean", p.mean.iter().map(|&m| f64::from(m as f32)))?;
    all_finite("var", p.var.iter().copied())?;
    if let Some(i) = p.var.iter().position(|&v| v < 0.0) {
        return Err(invalid(format!("var[{i}] is negative ({})", p.var[i])));
    }
    if !(p.epsilon.is_finite() && p.epsilon >= 0.0) {
        return Err(invalid(format!(
            "epsilon must be finite and >= 0, got {}",
            p.epsilon
        )));
    }
    all_finite(
        "1/sqrt(var + epsilon)",
        inv_std(p).into_iter().map(f64::from),
    )?;
    if !(p.clip.is_finite() && p.clip > 0.0) {
        return Err(invalid(format!(
            "clip must be finite and > 0, got {}",
            p.clip
        )));
    }
    let Some(last) = p.layers.last() else {
        return Err(invalid("no layers"));
    };
    let mut width = p.obs_dim;
    for (i, l) in p.layers.iter().enumerate() {
        if l.inputs != width {
            return Err(invalid(format!(
                "layer {i} takes {} inputs but receives {width}",
                l.inputs
            )));
        }
        if l.outputs == 0 {
            return Err(invalid(format!("layer {i} has no outputs")));
        }
        if Some(l.weight.len()) != l.inputs.checked_mul(l.outputs) {
            return Err(invalid(format!(
                "layer {i} weight has {} values, expected {} x {}",
                l.weight.len(),
                l.outputs,
                l.inputs
            )));
        }
        if l.bias.len() != l.outputs {
            return Err(invalid(format!(
                "layer {i} bias has {} values, expected {}",
                l.bias.len(),
                l.outputs
            )));
        }
        all_finite(
            &format!("layer {i} weight"),
            l.weight.iter().map(|&x| f64::from(x)),
        )?;
        all_finite(
            &format!("layer {i} bias"),
            l.bias.iter().map(|&x| f64::from(x)),
        )?;
        width = l.outputs;
    }
    if last.outputs < p.action_dim {
        return Err(invalid(format!(
            "last layer has {} outputs, fewer than action_dim {}",
            last.outputs, p.action_dim
        )));
    }
    Ok(())
}

fn all_finite(what: &str, values: impl Iterator<Item = f64>) -> Result<(), OnnxError> {
    for (i, v) in values.enumerate() {
        if !v.is_finite() {
            return Err(invalid(format!("{what}[{i}] = {v} is not finite")));
        }
    }
    Ok(())
}

fn inv_std(p: &MlpPolicy) -> Vec<f32> {
    p.var
        .iter()
        .map(|&v| (1.0 / (v + p.epsilon).sqrt()) as f32)
        .collect()
}

/// Owned graph pieces; borrowed into `onnx_rs` messages only when encoding.
#[derive(Default)]
struct Builder {
    initializers: Vec<(String, Vec<i64>, Init)>,
    nodes: Vec<(
        OpType<'static>,
        Vec<String>,
        String,
        Vec<Attribute<'static>>,
    )>,
}

enum Init {
    F32(Vec<f32>),
    I64(Vec<i64>),
}

impl Builder {
    fn init(&mut self, name: impl Into<String>, dims: Vec<usize>, data: Init) -> String {
        let name = name.into();
        let dims = dims.into_iter().map(|d| d as i64).collect();
        self.initializers.push((name.clone(), dims, data));
        name
    }

    fn node(
        &mut self,
        op: OpType<'static>,
        inputs: &[&str],
        output: impl Into<String>,
        attributes: Vec<Attribute<'static>>,
    ) -> String {
        let output = output.into();
        let inputs = inputs.iter().map(|s| s.to_string()).collect();
        self.nodes.push((op, inputs, output.clone(), attributes));
        output
    }
}

fn tensor_info(name: &str, cols: usize) -> ValueInfo<'_> {
    let dim = |value| TensorShapeDimension {
        value,
        denotation: "",
    };
    ValueInfo {
        name,
        r#type: Some(TypeProto {
            value: Some(TypeValue::Tensor(TensorTypeProto {
                elem_type: DataType::Float,
                shape: Some(TensorShape {
                    dim: vec![
                        dim(Dimension::Param("N")),
                        dim(Dimension::Value(cols as i64)),
                    ],
                }),
            })),
            denotation: "",
        }),
        ..Default::default()
    }
}

/// Encodes the policy as an ONNX model (see the crate docs for the graph).
pub fn to_onnx_bytes(p: &MlpPolicy) -> Result<Vec<u8>, OnnxError> {
    validate(p)?;
    let mut b = Builder::default();
    let n = p.obs_dim;
    let mean = b.init(
        "obs_mean",
        vec![n],
        Init::F32(p.mean.iter().map(|&m| m as f32).collect()),
    );
    let inv_std = b.init("obs_inv_std", vec![n], Init::F32(inv_std(p)));
    let lo = b.init("obs_clip_min", vec![], Init::F32(vec![-p.clip]));
    let hi = b.init("obs_clip_max", vec![], Init::F32(vec![p.clip]));
    let x = b.node(OpType::Sub, &[INPUT_NAME, &mean], "obs_centered", vec![]);
    let x = b.node(OpType::Mul, &[&x, &inv_std], "obs_scaled", vec![]);
    let mut x = b.node(OpType::Clip, &[&x, &lo, &hi], "obs_normalized", vec![]);

    for (i, l) in p.layers.iter().enumerate() {
        let w = b.init(
            format!("layers.{i}.weight"),
            vec![l.outputs, l.inputs],
            Init::F32(l.weight.clone()),
        );
        let bias = b.init(
            format!("layers.{i}.bias"),
            vec![l.outputs],
            Init::F32(l.bias.clone()),
        );
        let trans_b = Attribute {
            name: "transB",
            r#type: AttributeType::Int,
            i: 1,
            ..Default::default()
        };
        x = b.node(
            OpType::Gemm,
            &[&x, &w, &bias],
            format!("layers.{i}.out"),
            vec![trans_b],
        );
        if i + 1 < p.layers.len() {
            let (op, name, attrs) = match p.activation {
                Activation::Elu => {
                    let alpha = Attribute {
                        name: "alpha",
                        r#type: AttributeType::Float,
                        f: 1.0,
                        ..Default::default()
                    };
                    (OpType::Elu, "elu", vec![alpha])
                }
                Activation::Relu => (OpType::Relu, "relu", vec![]),
                Activation::Tanh => (OpType::Tanh, "tanh", vec![]),
            };
            x = b.node(op, &[&x], format!("layers.{i}.{name}"), attrs);
        }
    }
    let last_outputs = p.layers.last().map_or(0, |l| l.outputs);
    if last_outputs > p.action_dim {
        let starts = b.init("action_slice_starts", vec![1], Init::I64(vec![0]));
        let ends = b.init(
            "action_slice_ends",
            vec![1],
            Init::I64(vec![p.action_dim as i64]),
        );
        let axes = b.init("action_slice_axes", vec![1], Init::I64(vec![1]));
        x = b.node(
            OpType::Slice,
            &[&x, &starts, &ends, &axes],
            "action_pre",
            vec![],
        );
    }
    if p.squash {
        b.node(OpType::Tanh, &[&x], "action_tanh", vec![]);
    }
    // The last node writes the graph output.
    if let Some(last) = b.nodes.last_mut() {
        last.2 = OUTPUT_NAME.to_string();
    }

    let graph = Graph {
        name: "clawrl_policy",
        node: b
            .nodes
            .iter()
            .map(|(op, inputs, output, attrs)| Node {
                name: output,
                op_type: op.clone(),
                input: inputs.iter().map(String::as_str).collect(),
                output: vec![output],
                attribute: attrs.clone(),
                ..Default::default()
            })
            .collect(),
        initializer: b
            .initializers
            .iter()
            .map(|(name, dims, data)| match data {
                Init::F32(v) => TensorProto::from_f32(name, dims.clone(), v.clone()),
                Init::I64(v) => TensorProto::from_i64(name, dims.clone(), v.clone()),
            })
            .collect(),
        input: vec![tensor_info(INPUT_NAME, p.obs_dim)],
        output: vec![tensor_info(OUTPUT_NAME, p.action_dim)],
        ..Default::default()
    };
    let model = Model {
        ir_version: IR_VERSION,
        opset_import: vec![OperatorSetId {
            domain: "",
            version: OPSET,
        }],
        producer_name: "clawrl-onnx",
        producer_version: env!("CARGO_PKG_VERSION"),
        graph: Some(graph),
        ..Default::default()
    };
    Ok(onnx_rs::encode(&model))
}

/// Writes the ONNX model to `path` through a temporary file in the same folder and a rename,
/// so a reader never sees a half-written file.
pub fn write_onnx(path: &Path, p: &MlpPolicy) -> Result<(), OnnxError> {
    let bytes = to_onnx_bytes(p)?;
    let io_err = |err| OnnxError::Io {
        path: path.to_path_buf(),
        err,
    };
    let Some(file_name) = path.file_name() else {
        return Err(io_err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no file name",
        )));
    };
    let tmp = path.with_file_name(format!(
        ".{}.{}.tmp",
        file_name.to_string_lossy(),
        std::process::id()
    ));
    let result = fs::File::create(&tmp)
        .and_then(|mut f| {
            f.write_all(&bytes)?;
            f.sync_all()
        })
        .and_then(|()| fs::rename(&tmp, path));
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(io_err)
}

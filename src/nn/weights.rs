//! Saving and loading a [`Sequential`]'s weights in the safetensors format, laid out as PyTorch's
//! `nn.Sequential` state dict: `"{layer}.weight"` `[outputs, inputs]` and `"{layer}.bias"`
//! `[outputs]`, f32, with the layer index counting every layer (so `torch.nn.Sequential(Linear,
//! ReLU, Linear, ...)` loads the file with `load_state_dict`).

use std::collections::HashMap;
use std::path::Path;

use safetensors::tensor::{Dtype, TensorView as StView};
use safetensors::SafeTensors;

use crate::nn::model::{Layer, Sequential};

/// What can go wrong saving or loading weights.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WeightsError {
    /// Reading or writing the file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not valid safetensors.
    #[error("safetensors: {0}")]
    Format(#[from] safetensors::SafeTensorError),
    /// The file's tensors do not fit the model.
    #[error("the weights do not fit the model: {0}")]
    Mismatch(String),
    /// Moving the weights between host and device.
    #[error(transparent)]
    Runtime(#[from] crate::Error),
}

impl Sequential {
    /// The weights as safetensors bytes (see the module docs for the layout).
    pub fn to_safetensors(&self) -> Result<Vec<u8>, WeightsError> {
        let params = self.params().to_vec()?;
        let mut blobs: Vec<(String, Vec<usize>, Vec<u8>)> = Vec::new();
        for (i, layer) in self.layers().iter().enumerate() {
            if let Layer::Linear(l) = layer {
                let w = &params[l.weight_range()];
                // Ours is [inputs, outputs]; PyTorch's [outputs, inputs].
                let mut t = Vec::with_capacity(w.len() * 4);
                for o in 0..l.outputs {
                    for k in 0..l.inputs {
                        t.extend_from_slice(&w[k * l.outputs + o].to_le_bytes());
                    }
                }
                blobs.push((format!("{i}.weight"), vec![l.outputs, l.inputs], t));
                let b: Vec<u8> = params[l.bias_range()].iter().flat_map(|v| v.to_le_bytes()).collect();
                blobs.push((format!("{i}.bias"), vec![l.outputs], b));
            }
        }
        let views = blobs
            .iter()
            .map(|(name, shape, data)| Ok((name.clone(), StView::new(Dtype::F32, shape.clone(), data)?)))
            .collect::<Result<Vec<_>, WeightsError>>()?;
        let meta = HashMap::from([("format".to_string(), "pt".to_string())]);
        Ok(safetensors::serialize(views, Some(meta))?)
    }

    /// Writes the weights to `path` as safetensors.
    pub fn save_safetensors(&self, path: impl AsRef<Path>) -> Result<(), WeightsError> {
        let path = path.as_ref();
        std::fs::write(path, self.to_safetensors()?)
            .map_err(|source| WeightsError::Io { path: path.display().to_string(), source })
    }

    /// Replaces the weights with those of safetensors `bytes`: every dense layer's weight and bias
    /// must be there, f32, of its shape.
    pub fn load_safetensors_bytes(&mut self, bytes: &[u8]) -> Result<(), WeightsError> {
        let file = SafeTensors::deserialize(bytes)?;
        let mut params = vec![0.0f32; self.params().len()];
        for (i, layer) in self.layers().iter().enumerate() {
            if let Layer::Linear(l) = layer {
                let w = read_f32(&file, &format!("{i}.weight"), &[l.outputs, l.inputs])?;
                let dst = &mut params[l.weight_range()];
                for o in 0..l.outputs {
                    for k in 0..l.inputs {
                        dst[k * l.outputs + o] = w[o * l.inputs + k];
                    }
                }
                params[l.bias_range()].copy_from_slice(&read_f32(&file, &format!("{i}.bias"), &[l.outputs])?);
            }
        }
        self.set_params(params)?;
        Ok(())
    }

    /// Replaces the weights with those of the safetensors file at `path`.
    pub fn load_safetensors(&mut self, path: impl AsRef<Path>) -> Result<(), WeightsError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path)
            .map_err(|source| WeightsError::Io { path: path.display().to_string(), source })?;
        self.load_safetensors_bytes(&bytes)
    }
}

fn read_f32(file: &SafeTensors<'_>, name: &str, shape: &[usize]) -> Result<Vec<f32>, WeightsError> {
    let t = file.tensor(name).map_err(|_| WeightsError::Mismatch(format!("no tensor `{name}`")))?;
    if t.dtype() != Dtype::F32 || t.shape() != shape {
        return Err(WeightsError::Mismatch(format!(
            "`{name}` is {:?} {:?}, the model needs F32 {shape:?}",
            t.dtype(),
            t.shape()
        )));
    }
    Ok(t.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

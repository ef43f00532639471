//! The IDX format of MNIST and Fashion-MNIST (`train-images-idx3-ubyte`, ...), plain or gzipped.
//!
//! A file is a magic number (two zero bytes, the element type, the dimension count), one
//! big-endian `u32` per dimension, then the elements, big-endian, row-major. Image and label
//! files hold unsigned bytes (type `0x08`), the one type read here.
//!
//! ```
//! use prism_gpu::nn::idx;
//! let bytes = idx::encode_u8(&[2, 2, 3], &[0, 51, 102, 153, 204, 255, 1, 2, 3, 4, 5, 6]).unwrap();
//! let images = idx::Images::parse(&bytes).unwrap();
//! assert_eq!((images.count, images.rows, images.cols), (2, 2, 3));
//! assert_eq!(images.pixels[5], 1.0);
//! ```

use std::io::Read;
use std::path::Path;

/// What can go wrong reading an IDX file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IdxError {
    /// The file could not be read (or its gzip stream is corrupt).
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The bytes are not an IDX file of the expected kind.
    #[error("not a valid IDX file: {0}")]
    Format(String),
}

/// An IDX array of unsigned bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdxArray {
    /// The dimensions, outermost first.
    pub dims: Vec<usize>,
    /// The elements, row-major.
    pub data: Vec<u8>,
}

/// Decodes IDX bytes (gzip-compressed ones too, recognised by their magic).
pub fn parse(bytes: &[u8]) -> Result<IdxArray, IdxError> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_end(&mut raw)
            .map_err(|source| IdxError::Io { path: "<gzip stream>".into(), source })?;
        return parse(&raw);
    }
    let bad = |what: String| IdxError::Format(what);
    let header =
        bytes.get(..4).ok_or_else(|| bad(format!("{} bytes, shorter than the 4-byte magic", bytes.len())))?;
    if header[0] != 0 || header[1] != 0 {
        return Err(bad(format!(
            "magic {:02x}{:02x}{:02x}{:02x} does not start with two zero bytes",
            header[0], header[1], header[2], header[3]
        )));
    }
    if header[2] != 0x08 {
        return Err(bad(format!("element type 0x{:02x}; only unsigned bytes (0x08) are read", header[2])));
    }
    let ndims = usize::from(header[3]);
    if ndims == 0 {
        return Err(bad("no dimensions".into()));
    }
    let body = 4 + 4 * ndims;
    let dims_bytes = bytes
        .get(4..body)
        .ok_or_else(|| bad(format!("{} dimensions but only {} header bytes", ndims, bytes.len())))?;
    let dims: Vec<usize> =
        dims_bytes.chunks_exact(4).map(|d| u32::from_be_bytes([d[0], d[1], d[2], d[3]]) as usize).collect();
    let count = dims
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| bad(format!("dimensions {dims:?} overflow")))?;
    let data = &bytes[body..];
    if data.len() != count {
        return Err(bad(format!(
            "dimensions {dims:?} need {count} bytes of data, the file has {}",
            data.len()
        )));
    }
    Ok(IdxArray { dims, data: data.to_vec() })
}

/// Reads and decodes an IDX file (plain or gzipped).
pub fn read(path: impl AsRef<Path>) -> Result<IdxArray, IdxError> {
    let path = path.as_ref();
    let bytes =
        std::fs::read(path).map_err(|source| IdxError::Io { path: path.display().to_string(), source })?;
    parse(&bytes).map_err(|e| match e {
        IdxError::Format(what) => IdxError::Format(format!("{}: {what}", path.display())),
        other => other,
    })
}

/// The IDX encoding of unsigned bytes with `dims` (to write test files); an error when `data`
/// does not have their product of elements or a dimension does not fit in `u32`.
pub fn encode_u8(dims: &[usize], data: &[u8]) -> Result<Vec<u8>, IdxError> {
    let count = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    if dims.is_empty() || dims.len() > 255 || count != Some(data.len()) {
        return Err(IdxError::Format(format!("dimensions {dims:?} for {} elements", data.len())));
    }
    let mut out = vec![0, 0, 0x08, dims.len() as u8];
    for &d in dims {
        let d = u32::try_from(d).map_err(|_| IdxError::Format(format!("dimension {d} beyond u32")))?;
        out.extend_from_slice(&d.to_be_bytes());
    }
    out.extend_from_slice(data);
    Ok(out)
}

/// Images of an IDX3 file, as f32 in [0, 1] (the byte / 255).
#[derive(Debug, Clone, PartialEq)]
pub struct Images {
    /// How many images.
    pub count: usize,
    /// Rows of each image.
    pub rows: usize,
    /// Columns of each image.
    pub cols: usize,
    /// `[count, rows * cols]`, row-major.
    pub pixels: Vec<f32>,
}

impl Images {
    /// Images from IDX bytes of three dimensions.
    pub fn parse(bytes: &[u8]) -> Result<Self, IdxError> {
        Self::from_array(parse(bytes)?)
    }

    /// Images from an IDX3 file.
    pub fn read(path: impl AsRef<Path>) -> Result<Self, IdxError> {
        Self::from_array(read(path)?)
    }

    fn from_array(a: IdxArray) -> Result<Self, IdxError> {
        match a.dims[..] {
            [count, rows, cols] => {
                Ok(Self { count, rows, cols, pixels: a.data.iter().map(|&b| f32::from(b) / 255.0).collect() })
            }
            _ => Err(IdxError::Format(format!("images need 3 dimensions, got {:?}", a.dims))),
        }
    }

    /// Values per image.
    pub fn features(&self) -> usize {
        self.rows * self.cols
    }
}

/// Labels of an IDX1 file.
pub fn read_labels(path: impl AsRef<Path>) -> Result<Vec<u32>, IdxError> {
    labels_from(read(path)?)
}

/// Labels from IDX bytes of one dimension.
pub fn parse_labels(bytes: &[u8]) -> Result<Vec<u32>, IdxError> {
    labels_from(parse(bytes)?)
}

fn labels_from(a: IdxArray) -> Result<Vec<u32>, IdxError> {
    if a.dims.len() != 1 {
        return Err(IdxError::Format(format!("labels need 1 dimension, got {:?}", a.dims)));
    }
    Ok(a.data.into_iter().map(u32::from).collect())
}

/// A train and a test split in MNIST's file layout.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// Training images.
    pub train_images: Images,
    /// Training labels.
    pub train_labels: Vec<u32>,
    /// Test images.
    pub test_images: Images,
    /// Test labels.
    pub test_labels: Vec<u32>,
}

/// Where Debian's `dataset-fashion-mnist` package puts Fashion-MNIST.
pub const FASHION_MNIST_DIR: &str = "/usr/share/datasets/fashion-mnist";

/// Reads `{train,t10k}-{images-idx3,labels-idx1}-ubyte` (each plain or with `.gz`) from `dir`,
/// checking that each split has as many labels as images.
pub fn load_dir(dir: impl AsRef<Path>) -> Result<Dataset, IdxError> {
    let dir = dir.as_ref();
    let file = |stem: &str| {
        let plain = dir.join(stem);
        if plain.exists() {
            plain
        } else {
            dir.join(format!("{stem}.gz"))
        }
    };
    let train_images = Images::read(file("train-images-idx3-ubyte"))?;
    let train_labels = read_labels(file("train-labels-idx1-ubyte"))?;
    let test_images = Images::read(file("t10k-images-idx3-ubyte"))?;
    let test_labels = read_labels(file("t10k-labels-idx1-ubyte"))?;
    for (what, images, labels) in
        [("train", &train_images, &train_labels), ("test", &test_images, &test_labels)]
    {
        if images.count != labels.len() {
            return Err(IdxError::Format(format!(
                "{what}: {} images but {} labels",
                images.count,
                labels.len()
            )));
        }
    }
    Ok(Dataset { train_images, train_labels, test_images, test_labels })
}

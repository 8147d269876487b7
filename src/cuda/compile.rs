//! Compiling `cuda_kernels/*.cu` with NVRTC at run time, for the device's own architecture,
//! with the resulting PTX cached on disk (key: source hash, architecture, NVRTC version).

use super::driver::{include_dirs, nvrtc_present};
use crate::{Error, Result};
use std::path::PathBuf;

const COMMON: &str = include_str!("../../cuda_kernels/common.cuh");

/// One `.cu` file: one NVRTC program, one module per device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KernelFile {
    Unary,
    Binary,
    Cast,
    FillCopy,
    Reduce,
    Index,
    Random,
    Nn,
    Optim,
    Sort,
    Linalg,
}

impl KernelFile {
    pub const ALL: [KernelFile; 11] = [
        KernelFile::Unary,
        KernelFile::Binary,
        KernelFile::Cast,
        KernelFile::FillCopy,
        KernelFile::Reduce,
        KernelFile::Index,
        KernelFile::Random,
        KernelFile::Nn,
        KernelFile::Optim,
        KernelFile::Sort,
        KernelFile::Linalg,
    ];

    pub fn name(self) -> &'static str {
        match self {
            KernelFile::Unary => "elementwise_unary.cu",
            KernelFile::Binary => "elementwise_binary.cu",
            KernelFile::Cast => "cast.cu",
            KernelFile::FillCopy => "fill_copy.cu",
            KernelFile::Reduce => "reduce.cu",
            KernelFile::Index => "index.cu",
            KernelFile::Random => "random.cu",
            KernelFile::Nn => "nn.cu",
            KernelFile::Optim => "optim.cu",
            KernelFile::Sort => "sort.cu",
            KernelFile::Linalg => "linalg.cu",
        }
    }

    pub fn from_name(name: &str) -> Option<KernelFile> {
        KernelFile::ALL.into_iter().find(|f| f.name() == name)
    }

    fn raw_source(self) -> &'static str {
        match self {
            KernelFile::Unary => include_str!("../../cuda_kernels/elementwise_unary.cu"),
            KernelFile::Binary => include_str!("../../cuda_kernels/elementwise_binary.cu"),
            KernelFile::Cast => include_str!("../../cuda_kernels/cast.cu"),
            KernelFile::FillCopy => include_str!("../../cuda_kernels/fill_copy.cu"),
            KernelFile::Reduce => include_str!("../../cuda_kernels/reduce.cu"),
            KernelFile::Index => include_str!("../../cuda_kernels/index.cu"),
            KernelFile::Random => include_str!("../../cuda_kernels/random.cu"),
            KernelFile::Nn => include_str!("../../cuda_kernels/nn.cu"),
            KernelFile::Optim => include_str!("../../cuda_kernels/optim.cu"),
            KernelFile::Sort => include_str!("../../cuda_kernels/sort.cu"),
            KernelFile::Linalg => include_str!("../../cuda_kernels/linalg.cu"),
        }
    }

    /// The file with `common.cuh` pasted in place of its `#include` (one self-contained
    /// program, so no header sources have to be handed to NVRTC).
    pub fn source(self) -> String {
        self.raw_source().replace("#include \"common.cuh\"", COMMON)
    }
}

/// 64-bit FNV-1a: a stable content hash for cache keys (std's hasher may change).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn nvrtc_version() -> Result<(i32, i32)> {
    let mut major = 0;
    let mut minor = 0;
    // SAFETY: NVRTC was found (checked by the caller); the out-pointers are valid.
    let rc = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    if rc != cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(Error::Runtime(format!("nvrtcVersion failed: {rc:?}")));
    }
    Ok((major, minor))
}

fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("FERROTORCH_KERNEL_CACHE") {
        return (!d.is_empty()).then(|| PathBuf::from(d));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("ferrotorch").join("kernels"))
}

/// Directories holding `cuda_fp16.h` (NVRTC 12 does not ship it built in).
fn header_dirs() -> Vec<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    for var in ["CUDA_PATH", "CUDA_HOME", "CUDA_ROOT"] {
        if let Some(v) = std::env::var_os(var) {
            candidates.push(PathBuf::from(v).join("include"));
        }
    }
    candidates.push(PathBuf::from("/usr/local/cuda/include"));
    candidates.extend(include_dirs());
    candidates
        .into_iter()
        .filter(|d| d.join("cuda_fp16.h").is_file())
        .collect()
}

/// Compile `file` for compute capability `arch` to PTX (NVRTC; no GPU needed).
fn compile(file: KernelFile, arch: (i32, i32)) -> Result<String> {
    if !nvrtc_present() {
        return Err(Error::Runtime(
            "CUDA kernels cannot be compiled: NVRTC (libnvrtc.so) was not found. Install the CUDA \
             toolkit or NVIDIA's wheel: pip install nvidia-cuda-nvrtc-cu12"
                .into(),
        ));
    }
    let headers = header_dirs();
    let Some(include) = headers.first() else {
        return Err(Error::Runtime(
            "CUDA kernels cannot be compiled: cuda_fp16.h was not found (looked in $CUDA_PATH, \
             $CUDA_HOME, /usr/local/cuda and NVIDIA's pip wheels). Install the CUDA toolkit or: \
             pip install nvidia-cuda-runtime-cu12"
                .into(),
        ));
    };
    let opts = cudarc::nvrtc::CompileOptions {
        options: vec![
            "--std=c++17".into(),
            "-default-device".into(),
            format!("-arch=compute_{}{}", arch.0, arch.1),
        ],
        include_paths: vec![include.to_string_lossy().into_owned()],
        name: Some(file.name().into()),
        ..Default::default()
    };
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(file.source(), opts).map_err(|e| {
        let detail = match &e {
            cudarc::nvrtc::CompileError::CompileError { log, .. } => {
                log.to_string_lossy().into_owned()
            }
            other => format!("{other:?}"),
        };
        Error::Runtime(format!(
            "NVRTC failed to compile {} for compute_{}{}:\n{detail}",
            file.name(),
            arch.0,
            arch.1
        ))
    })?;
    Ok(ptx.to_src())
}

/// PTX of `file` for `arch`: from the disk cache, or compiled (and cached).
pub(crate) fn ptx_for(file: KernelFile, arch: (i32, i32)) -> Result<String> {
    let source = file.source();
    let version = if nvrtc_present() {
        nvrtc_version()?
    } else {
        (0, 0)
    };
    let key = format!(
        "{}-sm{}{}-nvrtc{}.{}-{:016x}.ptx",
        file.name().trim_end_matches(".cu"),
        arch.0,
        arch.1,
        version.0,
        version.1,
        fnv1a(source.as_bytes())
    );
    let cached = cache_dir().map(|d| d.join(&key));
    if let Some(path) = &cached {
        if let Ok(ptx) = std::fs::read_to_string(path) {
            if ptx.contains(".entry") {
                return Ok(ptx);
            }
        }
    }
    let ptx = compile(file, arch)?;
    if let Some(path) = cached {
        // Write to a temporary name and rename, so a concurrent reader never sees half a file.
        if let Some(dir) = path.parent() {
            if std::fs::create_dir_all(dir).is_ok() {
                let tmp = path.with_extension(format!("tmp{}", std::process::id()));
                if std::fs::write(&tmp, &ptx).is_ok() {
                    let _ = std::fs::rename(&tmp, &path);
                }
            }
        }
    }
    Ok(ptx)
}

/// Compile `file` for `arch` with NVRTC, without a GPU, and return the names of the kernels
/// in the PTX (used by tests and CI to check the run-time compilation path end to end).
pub fn compile_check(file: KernelFile, arch: (i32, i32)) -> Result<Vec<String>> {
    let ptx = compile(file, arch)?;
    Ok(ptx
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let rest = l
                .strip_prefix(".visible .entry ")
                .or_else(|| l.strip_prefix(".entry "))?;
            Some(rest.split('(').next()?.trim().to_string())
        })
        .collect())
}

/// `compile_check` by file name (`"optim.cu"`).
pub fn compile_check_file(file: &str, arch: (i32, i32)) -> Result<Vec<String>> {
    let f = KernelFile::from_name(file)
        .ok_or_else(|| Error::Value(format!("unknown kernel file {file:?}")))?;
    compile_check(f, arch)
}

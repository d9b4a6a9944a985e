//! A gzipped tar archive of in-memory files: the POSIX ustar header (name, mode, size, mtime,
//! checksum) in 512-byte blocks, the data padded to a block, two empty blocks at the end — what
//! `tar xzf` reads everywhere a bug report is opened. Only regular files, names under 100
//! bytes (the bundle's names are short and its own).
use std::io::Write;

use flate2::write::GzEncoder;
use flate2::Compression;

const BLOCK: usize = 512;

/// One file of the archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// The path inside the archive (`<run-id>/scenario.yaml`).
    pub name: String,
    pub data: Vec<u8>,
}

fn octal(field: &mut [u8], n: u64) {
    let s = format!("{:0width$o}\0", n, width = field.len() - 1);
    field.copy_from_slice(s.as_bytes());
}

/// The 512-byte ustar header of `f`; None when its name does not fit.
fn header(f: &File, mtime: u64) -> Option<[u8; BLOCK]> {
    let name = f.name.as_bytes();
    if name.len() >= 100 {
        return None;
    }
    let mut h = [0u8; BLOCK];
    h[..name.len()].copy_from_slice(name);
    octal(&mut h[100..108], 0o644);
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    octal(&mut h[124..136], f.data.len() as u64);
    octal(&mut h[136..148], mtime);
    h[156] = b'0';
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    // The checksum is summed with its own field as spaces.
    h[148..156].copy_from_slice(b"        ");
    let sum: u64 = h.iter().map(|&b| u64::from(b)).sum();
    let s = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(s.as_bytes());
    Some(h)
}

/// The files as a `.tar.gz`, each stamped `mtime` (Unix seconds).
pub fn tar_gz(files: &[File], mtime: u64) -> std::io::Result<Vec<u8>> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    for f in files {
        let h = header(f, mtime).ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{}: a name of 100 bytes or more", f.name))
        })?;
        gz.write_all(&h)?;
        gz.write_all(&f.data)?;
        let pad = (BLOCK - f.data.len() % BLOCK) % BLOCK;
        gz.write_all(&vec![0u8; pad])?;
    }
    gz.write_all(&[0u8; 2 * BLOCK])?;
    gz.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_tar_reads_what_it_writes() {
        let files = vec![
            File { name: "r/a.txt".into(), data: b"hello\n".to_vec() },
            File { name: "r/empty".into(), data: Vec::new() },
            File { name: "r/block".into(), data: vec![b'x'; 512] },
        ];
        let gz = tar_gz(&files, 1_796_677_346).unwrap();
        let dir = std::env::temp_dir().join(format!("sinkhole-tar-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.tar.gz");
        std::fs::write(&path, gz).unwrap();
        let out = std::process::Command::new("tar").arg("xzf").arg(&path).arg("-C").arg(&dir).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(std::fs::read(dir.join("r/a.txt")).unwrap(), b"hello\n");
        assert_eq!(std::fs::read(dir.join("r/empty")).unwrap(), b"");
        assert_eq!(std::fs::read(dir.join("r/block")).unwrap().len(), 512);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(header(&File { name: "x".repeat(100), data: vec![] }, 0).is_none());
    }
}

//! Unpacking a downloaded package (`.tar.gz`, `.zip`) into a directory, guarded: every entry lands
//! inside it (no absolute paths, no `..`, no link that leads out), and what is written is bounded.

use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use crate::source::ArchiveKind;

/// Why an archive was not unpacked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnpackError {
    #[error("it holds {entry:?}, which would land outside the package")]
    Escapes { entry: String },
    #[error("it holds a link {entry:?} to {target:?}, which leads outside the package")]
    LinkEscapes { entry: String, target: String },
    #[error("it unpacks to more than {limit} bytes ([modules] max_package_bytes)")]
    TooLarge { limit: u64 },
    #[error("it is not a readable {kind} archive: {reason}")]
    Corrupt { kind: &'static str, reason: String },
    #[error("writing {path}: {reason}")]
    Write { path: String, reason: String },
}

/// Unpack `bytes` into `into` (an empty directory), writing at most `limit` bytes of files.
pub fn unpack(kind: ArchiveKind, bytes: &[u8], into: &Path, limit: u64) -> Result<(), UnpackError> {
    match kind {
        ArchiveKind::TarGz => unpack_tar_gz(bytes, into, limit),
        ArchiveKind::Zip => unpack_zip(bytes, into, limit),
    }
}

/// `entry` as a relative path of plain components, or why not.
fn safe_path(entry: &str) -> Result<PathBuf, UnpackError> {
    let mut out = PathBuf::new();
    for component in Path::new(entry).components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(UnpackError::Escapes { entry: entry.to_string() });
            }
        }
    }
    Ok(out)
}

/// A symbolic link at `entry` pointing at `target` stays inside the package.
fn link_stays_inside(entry: &Path, target: &str) -> bool {
    if Path::new(target).is_absolute() {
        return false;
    }
    let mut depth: i64 = entry.components().count() as i64 - 1;
    for component in Path::new(target).components() {
        match component {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return false,
        }
        if depth < 0 {
            return false;
        }
    }
    true
}

struct Writer<'a> {
    into: &'a Path,
    written: u64,
    limit: u64,
}

impl Writer<'_> {
    fn file(&mut self, rel: &Path, mut reader: impl Read) -> Result<(), UnpackError> {
        let path = self.into.join(rel);
        let werr = |e: std::io::Error| UnpackError::Write { path: rel.display().to_string(), reason: e.to_string() };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(werr)?;
        }
        let mut out = std::fs::File::create(&path).map_err(werr)?;
        let mut buf = [0u8; 64 * 1024];
        loop {
            let n =
                reader.read(&mut buf).map_err(|e| UnpackError::Corrupt { kind: "package", reason: e.to_string() })?;
            if n == 0 {
                return Ok(());
            }
            self.written += n as u64;
            if self.written > self.limit {
                return Err(UnpackError::TooLarge { limit: self.limit });
            }
            out.write_all(&buf[..n]).map_err(werr)?;
        }
    }

    fn dir(&mut self, rel: &Path) -> Result<(), UnpackError> {
        std::fs::create_dir_all(self.into.join(rel))
            .map_err(|e| UnpackError::Write { path: rel.display().to_string(), reason: e.to_string() })
    }

    fn link(&mut self, rel: &Path, entry: &str, target: &str) -> Result<(), UnpackError> {
        if !link_stays_inside(rel, target) {
            return Err(UnpackError::LinkEscapes { entry: entry.to_string(), target: target.to_string() });
        }
        let path = self.into.join(rel);
        let werr = |e: std::io::Error| UnpackError::Write { path: rel.display().to_string(), reason: e.to_string() };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(werr)?;
        }
        #[cfg(unix)]
        std::os::unix::fs::symlink(target, &path).map_err(werr)?;
        Ok(())
    }
}

fn unpack_tar_gz(bytes: &[u8], into: &Path, limit: u64) -> Result<(), UnpackError> {
    let corrupt = |e: std::io::Error| UnpackError::Corrupt { kind: "tar.gz", reason: e.to_string() };
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut writer = Writer { into, written: 0, limit };
    for entry in archive.entries().map_err(corrupt)? {
        let entry = entry.map_err(corrupt)?;
        let name = entry.path().map_err(corrupt)?.to_string_lossy().into_owned();
        let rel = safe_path(&name)?;
        if rel.as_os_str().is_empty() {
            continue;
        }
        match entry.header().entry_type() {
            tar::EntryType::Regular | tar::EntryType::Continuous => writer.file(&rel, entry)?,
            tar::EntryType::Directory => writer.dir(&rel)?,
            tar::EntryType::Symlink => {
                let target = entry.link_name().map_err(corrupt)?.map(|t| t.to_string_lossy().into_owned());
                writer.link(&rel, &name, target.as_deref().unwrap_or(""))?;
            }
            tar::EntryType::Link => {
                let target = entry.link_name().map_err(corrupt)?.map(|t| t.to_string_lossy().into_owned());
                return Err(UnpackError::LinkEscapes { entry: name, target: target.unwrap_or_default() });
            }
            // Devices, FIFOs and extension headers carry no module code.
            _ => {}
        }
    }
    Ok(())
}

fn unpack_zip(bytes: &[u8], into: &Path, limit: u64) -> Result<(), UnpackError> {
    let corrupt = |e: zip::result::ZipError| UnpackError::Corrupt { kind: "zip", reason: e.to_string() };
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(corrupt)?;
    let mut writer = Writer { into, written: 0, limit };
    for i in 0..archive.len() {
        let mut file = archive.by_index(i).map_err(corrupt)?;
        let name = file.name().map_err(corrupt)?.to_string();
        let rel = safe_path(&name)?;
        if rel.as_os_str().is_empty() {
            continue;
        }
        if file.is_dir() {
            writer.dir(&rel)?;
        } else if file.is_symlink() {
            let mut target = String::new();
            file.read_to_string(&mut target)
                .map_err(|e| UnpackError::Corrupt { kind: "zip", reason: e.to_string() })?;
            writer.link(&rel, &name, &target)?;
        } else {
            writer.file(&rel, &mut file)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tar_gz(entries: &[(&str, tar::EntryType, &[u8], Option<&str>)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
        for (name, kind, data, link) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(*kind);
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            // Names are written raw so that hostile ones (`../x`, `/etc/x`) reach the reader.
            let raw = &mut header.as_old_mut().name;
            raw[..name.len()].copy_from_slice(name.as_bytes());
            if let Some(link) = link {
                header.set_link_name(link).unwrap();
            }
            header.set_cksum();
            builder.append(&header, *data).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn tar_gz_unpacks_inside_and_refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let good = tar_gz(&[
            ("modules/", tar::EntryType::Directory, b"", None),
            ("modules/sg/main.tf", tar::EntryType::Regular, b"resource \"x\" \"y\" {}\n", None),
            ("modules/sg/shared.tf", tar::EntryType::Symlink, b"", Some("../../common.tf")),
            ("common.tf", tar::EntryType::Regular, b"# common\n", None),
        ]);
        unpack(ArchiveKind::TarGz, &good, dir.path(), 1 << 20).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("modules/sg/main.tf")).unwrap(),
            "resource \"x\" \"y\" {}\n"
        );
        assert_eq!(std::fs::read_to_string(dir.path().join("modules/sg/shared.tf")).unwrap(), "# common\n");

        let cases: [(&str, Vec<u8>); 4] = [
            ("outside", tar_gz(&[("../evil.tf", tar::EntryType::Regular, b"x", None)])),
            ("outside", tar_gz(&[("/etc/evil.tf", tar::EntryType::Regular, b"x", None)])),
            ("leads outside", tar_gz(&[("a/link", tar::EntryType::Symlink, b"", Some("../../etc/passwd"))])),
            ("leads outside", tar_gz(&[("a/link", tar::EntryType::Symlink, b"", Some("/etc/passwd"))])),
        ];
        for (want, bytes) in cases {
            let fresh = tempfile::tempdir().unwrap();
            let err = unpack(ArchiveKind::TarGz, &bytes, fresh.path(), 1 << 20).unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
        }
        let big = tar_gz(&[("big.tf", tar::EntryType::Regular, &[b'#'; 5000], None)]);
        let err = unpack(ArchiveKind::TarGz, &big, tempfile::tempdir().unwrap().path(), 4096).unwrap_err();
        assert_eq!(err, UnpackError::TooLarge { limit: 4096 });
        let err = unpack(ArchiveKind::TarGz, b"not gzip", tempfile::tempdir().unwrap().path(), 4096).unwrap_err();
        assert!(err.to_string().contains("not a readable tar.gz archive"), "{err}");
    }

    #[test]
    fn zip_unpacks_inside_and_refuses_escapes() {
        use zip::write::SimpleFileOptions;
        let build = |entries: &[(&str, &[u8])]| {
            let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
            for (name, data) in entries {
                out.start_file(*name, SimpleFileOptions::default()).unwrap();
                out.write_all(data).unwrap();
            }
            out.finish().unwrap().into_inner()
        };
        let dir = tempfile::tempdir().unwrap();
        unpack(ArchiveKind::Zip, &build(&[("vpc/main.tf", b"# vpc\n")]), dir.path(), 1 << 20).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("vpc/main.tf")).unwrap(), "# vpc\n");
        let err = unpack(ArchiveKind::Zip, &build(&[("../x.tf", b"x")]), tempfile::tempdir().unwrap().path(), 1 << 20)
            .unwrap_err();
        assert!(err.to_string().contains("outside the package"), "{err}");
        let err = unpack(ArchiveKind::Zip, &build(&[("x.tf", &[b'#'; 100])]), tempfile::tempdir().unwrap().path(), 10)
            .unwrap_err();
        assert_eq!(err, UnpackError::TooLarge { limit: 10 });
    }
}

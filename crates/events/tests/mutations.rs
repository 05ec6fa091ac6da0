//! Broken input never panics the reader: every corpus file, cut, spliced and sprinkled with bytes
//! that matter to JSON, is read to a result (records, bad entries, or an error naming the place).

use driftback_events::{Disposition, Entry, FilterConfig, ReadError, decode, scan};

/// A small deterministic generator (xorshift), so a failure reproduces.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const SPICE: &[&str] =
    &["{", "}", "[", "]", ",", ":", "\"", "\\", "\\u0000", "\u{e9}", "null", "1e999", " ", "\n", "\"Records\""];

fn mutate(text: &str, rng: &mut Rng) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(4) {
            0 => bytes.truncate(at),
            1 => {
                let spice = SPICE[rng.below(SPICE.len())].as_bytes();
                bytes.splice(at..at, spice.iter().copied());
            }
            2 => {
                let end = (at + rng.below(64)).min(bytes.len());
                bytes.drain(at..end);
            }
            _ => {
                // A duplicated stretch: repeated keys, repeated records.
                let end = (at + rng.below(200)).min(bytes.len());
                let copy = bytes[at..end].to_vec();
                bytes.splice(at..at, copy);
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn mutated_corpus_files_are_read_without_panicking() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path().join("events.json")).collect();
    files.sort();
    let filter = FilterConfig { iac_principals: vec!["terraform-*".into()] };
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut records, mut bad, mut errors) = (0, 0, 0);
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for _ in 0..12 {
            let broken = mutate(&text, &mut rng);
            let scanned = scan(&broken, "m", |entry| match entry {
                Entry::Record(r) => {
                    records += 1;
                    if r.disposition(&filter) == Disposition::Keep {
                        let _ = r.to_event();
                    }
                }
                Entry::Bad(b) => {
                    assert!(!b.reason.is_empty() && b.location.starts_with("m: "), "{b:?}");
                    bad += 1;
                }
            });
            match scanned {
                Ok(()) => {}
                Err(ReadError::Syntax { line, .. }) => {
                    let lines = broken.lines().count().max(1);
                    assert!((1..=lines + 1).contains(&line), "{}: line {line} of {lines}", file.display());
                    errors += 1;
                }
                Err(_) => errors += 1,
            }
            // The whole-file reader agrees on whether the input is readable at all.
            assert_eq!(decode(broken.as_bytes(), "m").is_ok(), scanned.is_ok(), "{}", file.display());
        }
    }
    // The mutations reach every outcome: records still read, bad entries, unreadable inputs.
    assert!(records > 500 && bad > 20 && errors > 200, "records {records}, bad {bad}, errors {errors}");
}

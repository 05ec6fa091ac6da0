//! The built-in embedder: signed feature hashing of a signature's (or any text's) tokens, so
//! changes that share services, APIs, resource types and parameter paths are near, with no model
//! and no service. Deterministic across runs, machines and versions of Rust.

use crate::error::EmbedError;

/// Name recorded with the vectors; change it whenever the features or the hash change, so a
/// knowledge base embedded by an older version is re-embedded rather than mixed.
pub const HASHING_EMBEDDER_NAME: &str = "hashing-v1";

/// Default vector length: enough that the few hundred features of a signature rarely collide.
pub const DEFAULT_HASHING_DIMENSION: usize = 256;

/// Weight of a whole token (`api:ModifyInstanceAttribute`, `param:instanceType.value=string`).
const TOKEN_WEIGHT: f32 = 1.0;
/// Weight of a parameter's path without its value shape (`path:instanceType.value`).
const PATH_WEIGHT: f32 = 0.7;
/// Weight of each word of a token (`word:instance`, `word:type`), which is also how free text
/// meets signatures.
const WORD_WEIGHT: f32 = 0.3;

/// Feature hashing into `dimension` components, L2-normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashingEmbedder {
    dimension: usize,
}

impl HashingEmbedder {
    /// An embedder of `dimension` components (at least 16).
    pub fn new(dimension: usize) -> Result<Self, EmbedError> {
        if dimension < 16 {
            return Err(EmbedError::Config(format!(
                "embed.dimension = {dimension} is too small for the hashing embedder; use 16 or more (default \
                 {DEFAULT_HASHING_DIMENSION})"
            )));
        }
        Ok(HashingEmbedder { dimension })
    }

    /// The vector length.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// The vector of `text`. Fails only when `text` has no token at all.
    pub fn embed(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut v = vec![0f32; self.dimension];
        let mut any = false;
        for token in text.split_whitespace() {
            any = true;
            let token = token.to_lowercase();
            self.add(&mut v, &token, TOKEN_WEIGHT);
            if let Some(param) = token.strip_prefix("param:") {
                let path = param.split_once('=').map_or(param, |(p, _)| p);
                self.add(&mut v, &format!("path:{path}"), PATH_WEIGHT);
            }
        }
        if !any {
            return Err(EmbedError::Empty);
        }
        // Words come from the original case, where camelCase boundaries are still visible.
        for token in text.split_whitespace() {
            let body = token.split_once(':').map_or(token, |(_, rest)| rest);
            for word in words(body) {
                self.add(&mut v, &format!("word:{word}"), WORD_WEIGHT);
            }
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm == 0.0 {
            // Every feature cancelled out (possible only in theory with signed hashing).
            v[0] = 1.0;
            return Ok(v);
        }
        Ok(v.into_iter().map(|x| x / norm).collect())
    }

    fn add(&self, v: &mut [f32], feature: &str, weight: f32) {
        let h = fnv1a64(feature.as_bytes());
        let index = (h % self.dimension as u64) as usize;
        // An independent bit decides the sign, so collisions cancel out on average.
        let sign = if (h >> 63) & 1 == 1 { -1.0 } else { 1.0 };
        v[index] += sign * weight;
    }
}

/// FNV-1a, 64 bits: tiny, and the same everywhere (std's hasher may change between releases).
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Lowercase words of `s`: split at anything not alphanumeric and at camelCase boundaries
/// (`ModifyInstanceAttribute` -> modify, instance, attribute); single characters are dropped.
fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in s.chars() {
        if !c.is_alphanumeric() {
            flush(&mut word, &mut out);
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower {
            flush(&mut word, &mut out);
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    flush(&mut word, &mut out);
    out
}

fn flush(word: &mut String, out: &mut Vec<String>) {
    if word.chars().count() > 1 {
        out.push(std::mem::take(word));
    } else {
        word.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cos(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn words_split_camel_case_and_punctuation() {
        assert_eq!(words("ModifyInstanceAttribute"), ["modify", "instance", "attribute"]);
        assert_eq!(words("instanceType.value=string"), ["instance", "type", "value", "string"]);
        assert_eq!(words("ipPermissions.items[].cidrIp"), ["ip", "permissions", "items", "cidr", "ip"]);
        assert_eq!(words("SSEAlgorithm"), ["ssealgorithm"]);
    }

    #[test]
    fn deterministic_unit_vectors() {
        let e = HashingEmbedder::new(64).unwrap();
        let a = e.embed("service:ec2 api:ModifyInstanceAttribute").unwrap();
        assert_eq!(a, e.embed("service:ec2 api:ModifyInstanceAttribute").unwrap());
        assert_eq!(a.len(), 64);
        assert!((cos(&a, &a) - 1.0).abs() < 1e-5);
        // Pinned: the vectors stored in knowledge bases must not change under a given name.
        assert_eq!(fnv1a64(b"word:instance"), 0xaa72_e7a0_0407_7612);
        assert!(matches!(e.embed("  \n"), Err(EmbedError::Empty)));
        assert!(HashingEmbedder::new(4).is_err());
    }

    #[test]
    fn similar_changes_are_nearer_than_unrelated_ones() {
        let e = HashingEmbedder::new(256).unwrap();
        let instance_type = e
            .embed("service:ec2 api:ModifyInstanceAttribute type:aws_instance param:instanceType.value=string")
            .unwrap();
        let other_instance_type = e
            .embed("service:ec2 api:ModifyInstanceAttribute type:aws_instance param:instanceType.value=string param:instanceId=id")
            .unwrap();
        let termination = e
            .embed("service:ec2 api:ModifyInstanceAttribute type:aws_instance param:disableApiTermination.value=bool")
            .unwrap();
        let queue = e
            .embed("service:sqs api:SetQueueAttributes type:aws_sqs_queue param:attributes.VisibilityTimeout=int")
            .unwrap();
        let same_kind = cos(&instance_type, &other_instance_type);
        let sibling = cos(&instance_type, &termination);
        let unrelated = cos(&instance_type, &queue);
        assert!(same_kind > sibling && sibling > unrelated, "{same_kind} > {sibling} > {unrelated}");
        assert!(same_kind > 0.8, "{same_kind}");
        // Free text finds signatures through their words.
        let query = e.embed("instance type").unwrap();
        assert!(cos(&query, &instance_type) > cos(&query, &queue));
        let query = e.embed("queue visibility timeout").unwrap();
        assert!(cos(&query, &queue) > cos(&query, &instance_type));
    }
}

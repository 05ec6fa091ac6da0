//! CIDR blocks compared as address ranges: a list after a change is wider when it lets in an
//! address no block of the list before let in.

use std::net::IpAddr;

use serde_json::Value;

/// A block: its network address as a number, its prefix length, and whether it is IPv6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    v6: bool,
    network: u128,
    prefix: u32,
}

fn parse(text: &str) -> Option<Block> {
    let (addr, prefix) = match text.trim().split_once('/') {
        Some((a, p)) => (a, Some(p.parse::<u32>().ok()?)),
        None => (text.trim(), None),
    };
    let (v6, bits, number) = match addr.parse::<IpAddr>().ok()? {
        IpAddr::V4(a) => (false, 32, u128::from(u32::from(a))),
        IpAddr::V6(a) => (true, 128, u128::from(a)),
    };
    let prefix = prefix.unwrap_or(bits);
    if prefix > bits {
        return None;
    }
    Some(Block { v6, network: number & mask(bits, prefix), prefix })
}

fn mask(bits: u32, prefix: u32) -> u128 {
    let all: u128 = if bits == 128 { u128::MAX } else { (1u128 << bits) - 1 };
    if prefix == 0 { 0 } else { all & !((1u128 << (bits - prefix)) - 1) }
}

/// Whether `outer` contains every address of `inner`.
fn contains(outer: Block, inner: Block) -> bool {
    let bits = if outer.v6 { 128 } else { 32 };
    outer.v6 == inner.v6 && outer.prefix <= inner.prefix && inner.network & mask(bits, outer.prefix) == outer.network
}

fn texts(values: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for v in values {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(items) => out.extend(items.iter().filter_map(|i| i.as_str().map(str::to_string))),
            _ => {}
        }
    }
    out
}

/// How many addresses the blocks let in (blocks inside another of the list counted once).
fn size(blocks: &[Block]) -> f64 {
    blocks
        .iter()
        .enumerate()
        .filter(|(i, b)| !blocks.iter().enumerate().any(|(j, o)| j != *i && contains(*o, **b) && (o != *b || j < *i)))
        .map(|(_, b)| 2f64.powi((if b.v6 { 128 } else { 32 }) - b.prefix as i32))
        .sum()
}

/// Whether CIDR blocks let in the internet: `0.0.0.0/0` or `::/0`, or the same split into pieces.
/// An IPv4 block wider than a /8 (no private range is: the largest, 10.0.0.0/8, is one) or IPv4
/// blocks covering half of all addresses (`0.0.0.0/1` with `128.0.0.0/1`); an IPv6 block holding
/// all of the global unicast range 2000::/3, or IPv6 blocks covering half of it.
pub(crate) fn internet_wide(texts: &[&str]) -> bool {
    let blocks: Vec<Block> = texts.iter().filter_map(|t| parse(t)).collect();
    let (v4, v6): (Vec<Block>, Vec<Block>) = blocks.into_iter().partition(|b| !b.v6);
    let global_unicast = Block { v6: true, network: 0x2000u128 << 112, prefix: 3 };
    let inside_global: Vec<Block> = v6.iter().copied().filter(|b| contains(global_unicast, *b)).collect();
    v4.iter().any(|b| b.prefix < 8)
        || size(&v4) >= 2f64.powi(31)
        || v6.iter().any(|b| contains(*b, global_unicast))
        || size(&inside_global) >= 2f64.powi(124)
}

/// How `after` lets in more than `before`, one sentence each: more addresses in all (a block
/// opened to the internet, a range added). A range swapped for one of the same size (an office's
/// egress range moved) lets in no more. A text that is not a CIDR block (a reference the code does
/// not resolve) is said too: it cannot be verified.
pub(crate) fn widenings(before: &[Value], after: &[Value]) -> Vec<String> {
    let was: Vec<Block> = texts(before).iter().filter_map(|t| parse(t)).collect();
    let mut now = Vec::new();
    let mut out = Vec::new();
    for text in texts(after) {
        match parse(&text) {
            Some(block) => now.push((text, block)),
            None => out.push(format!("lets in {text:?}, which cannot be read as a CIDR block (not verified)")),
        }
    }
    let new: Vec<&String> = now.iter().filter(|(_, b)| !was.iter().any(|w| contains(*w, *b))).map(|(t, _)| t).collect();
    let blocks: Vec<Block> = now.iter().map(|(_, b)| *b).collect();
    let opened_to_all = now.iter().any(|(_, b)| b.prefix == 0) && !was.iter().any(|w| w.prefix == 0);
    if !new.is_empty() && (size(&blocks) > size(&was) || opened_to_all) {
        let list: Vec<&str> = new.iter().map(|t| t.as_str()).collect();
        out.push(format!("lets in {}, more addresses than the blocks before", list.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_wider_block_or_a_new_range_widens_a_narrower_one_does_not() {
        let before = [json!(["10.0.0.0/8", "203.0.113.0/24"])];
        assert!(widenings(&before, &[json!(["10.1.0.0/16"])]).is_empty());
        assert!(widenings(&before, &[json!(["203.0.113.7/32", "10.0.0.0/8"])]).is_empty());
        assert_eq!(
            widenings(&before, &[json!(["0.0.0.0/0"])]),
            ["lets in 0.0.0.0/0, more addresses than the blocks before"]
        );
        // A range added widens; a range swapped for one of the same size does not.
        assert_eq!(widenings(&before, &[json!(["10.0.0.0/8", "203.0.113.0/24", "198.51.100.0/24"])]).len(), 1);
        assert!(widenings(&before, &[json!(["10.0.0.0/8", "198.51.100.0/24"])]).is_empty());
        assert_eq!(widenings(&[json!(["192.0.2.0/27"])], &[json!(["192.0.2.64/26"])]).len(), 1);
        assert_eq!(widenings(&[json!(["2001:db8::/32"])], &[json!(["2001:db8:1::/48"])]).len(), 0);
        assert_eq!(widenings(&[json!(["2001:db8::/32"])], &[json!(["::/0"])]).len(), 1);
        // IPv4 never contains IPv6.
        assert_eq!(widenings(&[json!(["0.0.0.0/0"])], &[json!(["::/0"])]).len(), 1);
        assert!(widenings(&before, &[json!(["${var.cidrs}"])])[0].contains("not verified"));
    }

    #[test]
    fn the_internet_split_into_pieces_is_still_the_internet() {
        assert!(internet_wide(&["0.0.0.0/0"]));
        assert!(internet_wide(&["::/0"]));
        assert!(internet_wide(&["10.60.0.0/16", "0.0.0.0/1", "128.0.0.0/1"]));
        assert!(internet_wide(&["0.0.0.0/2", "64.0.0.0/2"]));
        assert!(internet_wide(&["3.0.0.0/6"]));
        assert!(internet_wide(&["2000::/3"]));
        assert!(internet_wide(&["2000::/4", "3000::/4"]));
        assert!(!internet_wide(&["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"]));
        assert!(internet_wide(&["0.0.0.0/2"]));
        assert!(!internet_wide(&["3.0.0.0/8", "100.64.0.0/10"]));
        assert!(!internet_wide(&["2001:db8::/32", "fc00::/7"]));
        assert!(!internet_wide(&["${var.cidrs}"]));
    }
}

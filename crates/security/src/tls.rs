//! The lowest TLS version a load balancer's security policy accepts, read from the policy's name.
//!
//! Elastic Load Balancing names its predefined policies by what they accept:
//! `ELBSecurityPolicy-TLS13-1-2-2021-06` accepts TLS 1.2 and 1.3, `ELBSecurityPolicy-TLS-1-1-2017-01`
//! TLS 1.1 up, `ELBSecurityPolicy-FS-1-2-Res-2020-10` TLS 1.2 up. The dated policies without a
//! version in the name (`ELBSecurityPolicy-2016-08`, `ELBSecurityPolicy-FS-2018-06`) are the older
//! defaults, which accept TLS 1.0.

/// The minimum TLS minor version (`0` for TLS 1.0, `2` for TLS 1.2) a predefined ELB policy
/// accepts; `None` for a name that is not a predefined ELB policy.
pub fn minimum_minor(policy: &str) -> Option<u8> {
    let rest = policy.strip_prefix("ELBSecurityPolicy-")?;
    let parts: Vec<&str> = rest.split('-').collect();
    // `TLS13-1-2-...`, `TLS-1-2-...`, `FS-1-2-...`: the version follows the family.
    for (i, part) in parts.iter().enumerate() {
        if matches!(*part, "TLS13" | "TLS" | "FS") {
            if let (Some(&"1"), Some(minor)) = (parts.get(i + 1), parts.get(i + 2)) {
                if let Ok(minor) = minor.parse::<u8>() {
                    if minor <= 3 {
                        return Some(minor);
                    }
                }
            }
        }
    }
    // A dated default (`2016-08`, `FS-2018-06`): TLS 1.0 up.
    parts.iter().any(|p| p.len() == 4 && p.chars().all(|c| c.is_ascii_digit())).then_some(0)
}

/// Why a change of policy lowers the TLS floor, or `None` when it does not (or either name is not
/// a predefined policy, which the control's list judges instead).
pub fn lowered(before: &str, after: &str) -> Option<String> {
    let (was, now) = (minimum_minor(before)?, minimum_minor(after)?);
    (now < was).then(|| format!("accepts TLS 1.{now} where {before} accepted TLS 1.{was} and up"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_minimum_version_is_read_from_every_family_of_policy_name() {
        assert_eq!(minimum_minor("ELBSecurityPolicy-TLS13-1-2-2021-06"), Some(2));
        assert_eq!(minimum_minor("ELBSecurityPolicy-TLS13-1-3-FIPS-2023-04"), Some(3));
        assert_eq!(minimum_minor("ELBSecurityPolicy-TLS13-1-0-2021-06"), Some(0));
        assert_eq!(minimum_minor("ELBSecurityPolicy-TLS-1-1-2017-01"), Some(1));
        assert_eq!(minimum_minor("ELBSecurityPolicy-FS-1-2-Res-2020-10"), Some(2));
        assert_eq!(minimum_minor("ELBSecurityPolicy-2016-08"), Some(0));
        assert_eq!(minimum_minor("ELBSecurityPolicy-FS-2018-06"), Some(0));
        assert_eq!(minimum_minor("my-custom-policy"), None);
    }

    #[test]
    fn only_a_lower_floor_is_a_lowering() {
        assert!(lowered("ELBSecurityPolicy-TLS13-1-2-2021-06", "ELBSecurityPolicy-2016-08").is_some());
        assert!(lowered("ELBSecurityPolicy-TLS-1-1-2017-01", "ELBSecurityPolicy-TLS13-1-2-2021-06").is_none());
        assert!(lowered("ELBSecurityPolicy-TLS13-1-2-2021-06", "ELBSecurityPolicy-TLS13-1-2-Res-2021-06").is_none());
        assert!(lowered("custom", "ELBSecurityPolicy-2016-08").is_none());
    }
}

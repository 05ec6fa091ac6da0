//! Values a control reads from another resource. A CIS alarm is an alarm on the metric a CIS log
//! metric filter produces: nothing in the alarm's own values says so, but the filter whose metric
//! (name and namespace) it watches does. Before judging, a resource gains, under a `linked_` name,
//! the values of the resources linked to it.

use serde_json::Value;

use crate::predicate::resolve;

/// One link: resources of `rtype` gain `name`, the values at `take` of every resource of `other`
/// whose values at each pair's second path equal its own at the first.
struct Link {
    rtype: &'static str,
    name: &'static str,
    other: &'static str,
    take: &'static str,
    equal: &'static [(&'static str, &'static str)],
}

const LINKS: &[Link] = &[Link {
    rtype: "aws_cloudwatch_metric_alarm",
    name: "linked_metric_filter_pattern",
    other: "aws_cloudwatch_log_metric_filter",
    take: "pattern",
    equal: &[("metric_name", "metric_transformation.name"), ("namespace", "metric_transformation.namespace")],
}];

/// The resource types whose values `with_links` reads for `rtype` (to look up only what is needed).
pub fn linked_types(rtype: &str) -> Vec<&'static str> {
    LINKS.iter().filter(|l| l.rtype == rtype).map(|l| l.other).collect()
}

/// `values` with the values of the resources linked to it (`others(type)`: every resource of that
/// type, as values), each under its link's `linked_` name.
pub fn with_links(rtype: &str, values: &Value, others: &dyn Fn(&str) -> Vec<Value>) -> Value {
    let mut out = values.clone();
    for link in LINKS.iter().filter(|l| l.rtype == rtype) {
        let taken: Vec<Value> = others(link.other)
            .iter()
            .filter(|other| {
                link.equal.iter().all(|(mine, theirs)| {
                    let (a, b) = (resolve(values, mine), resolve(other, theirs));
                    !a.is_empty() && a == b
                })
            })
            .flat_map(|other| resolve(other, link.take))
            .collect();
        if let (Some(map), false) = (out.as_object_mut(), taken.is_empty()) {
            map.insert(link.name.to_string(), Value::Array(taken));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_alarm_gains_the_pattern_of_the_filter_whose_metric_it_watches() {
        let alarm = json!({"alarm_name": "root", "metric_name": "RootUsage", "namespace": "CIS"});
        let filters = vec![
            json!({"pattern": "{ $.userIdentity.type = \"Root\" }", "metric_transformation": [{"name": "RootUsage", "namespace": "CIS"}]}),
            json!({"pattern": "ERROR", "metric_transformation": [{"name": "Errors", "namespace": "App"}]}),
            json!({"pattern": "other namespace", "metric_transformation": [{"name": "RootUsage", "namespace": "App"}]}),
        ];
        let others = |t: &str| if t == "aws_cloudwatch_log_metric_filter" { filters.clone() } else { vec![] };
        let linked = with_links("aws_cloudwatch_metric_alarm", &alarm, &others);
        assert_eq!(linked["linked_metric_filter_pattern"], json!(["{ $.userIdentity.type = \"Root\" }"]));
        let unrelated = json!({"alarm_name": "cpu", "metric_name": "CPUUtilization", "namespace": "AWS/EC2"});
        assert_eq!(with_links("aws_cloudwatch_metric_alarm", &unrelated, &others), unrelated);
        assert_eq!(linked_types("aws_cloudwatch_metric_alarm"), ["aws_cloudwatch_log_metric_filter"]);
    }
}

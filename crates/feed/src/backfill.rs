//! Backfill through CloudTrail LookupEvents: oldest slice first, at most 2 requests a second, the
//! checkpoint moved past a slice only once every page of it is durably recorded.

use std::time::Duration;

use aws_sdk_cloudtrail::Client;
use aws_sdk_cloudtrail::error::ProvideErrorMetadata;
use aws_sdk_cloudtrail::types::{LookupAttribute, LookupAttributeKey};
use chrono::{DateTime, Utc};
use driftback_events::FilterConfig;
use serde::{Deserialize, Serialize};

use crate::intake::Intake;
use crate::ledger::{Ledger, record_parts};
use crate::{FeedError, Shutdown};

/// LookupEvents answers for the last 90 days only.
pub const LOOKUP_EVENTS_MAX_AGE_DAYS: i64 = 90;
/// CloudTrail's limit per account and region; it cannot be raised.
const MAX_REQUESTS_PER_SECOND: f64 = 2.0;
/// LookupEvents' largest page.
const PAGE_SIZE: i32 = 50;

/// `[backfill]`: reading past events through CloudTrail LookupEvents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BackfillConfig {
    /// AWS region whose trail is read; default: from the environment or the AWS profile.
    pub region: Option<String>,
    /// Another CloudTrail endpoint (a local test server); default: AWS's.
    pub endpoint_url: Option<String>,
    /// Requests per second, at most 2 (CloudTrail's limit per account and region).
    pub requests_per_second: f64,
    /// The time range is read in slices of this many seconds, oldest first; the checkpoint moves
    /// at the end of each slice.
    pub slice_secs: u64,
    /// Attempts per request when CloudTrail throttles or a call fails in transit.
    pub max_attempts: u32,
    /// `serve` backfills from the last checkpoint to now before consuming the queue.
    pub on_start: bool,
}

impl Default for BackfillConfig {
    fn default() -> Self {
        BackfillConfig {
            region: None,
            endpoint_url: None,
            requests_per_second: MAX_REQUESTS_PER_SECOND,
            slice_secs: 3600,
            max_attempts: 8,
            on_start: true,
        }
    }
}

impl BackfillConfig {
    pub fn validate(&self) -> Result<(), FeedError> {
        if !(self.requests_per_second > 0.0 && self.requests_per_second <= MAX_REQUESTS_PER_SECOND) {
            return Err(FeedError::Config(format!(
                "[backfill] requests_per_second = {} must be above 0 and at most {MAX_REQUESTS_PER_SECOND} \
                 (CloudTrail's LookupEvents limit per account and region)",
                self.requests_per_second
            )));
        }
        if self.slice_secs == 0 || self.max_attempts == 0 {
            return Err(FeedError::Config("[backfill] slice_secs and max_attempts must be at least 1".into()));
        }
        Ok(())
    }
}

/// The checkpoint a region's backfill and feed share.
pub fn checkpoint_name(region: &str) -> String {
    format!("cloudtrail:{region}")
}

/// How far a backfill is, after each page.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackfillProgress {
    /// Seconds of the range done (whole slices), and in all.
    pub done_secs: u64,
    pub total_secs: u64,
    pub events: usize,
    pub pages: usize,
}

/// What a backfill did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct BackfillReport {
    pub pages: usize,
    pub events: usize,
    pub new_events: usize,
    pub duplicates: usize,
    pub bad: usize,
    pub throttled: usize,
    /// Where the checkpoint is now.
    pub checkpoint: Option<DateTime<Utc>>,
}

/// A LookupEvents reader for one region.
#[derive(Debug)]
pub struct Backfill {
    client: Client,
    region: String,
    config: BackfillConfig,
    limiter: RateLimiter,
}

impl Backfill {
    /// Build the client from the environment's AWS configuration and `config`. Retries are ours (so
    /// they go through the rate limiter), not the SDK's.
    pub async fn new(config: BackfillConfig) -> Result<Backfill, FeedError> {
        config.validate()?;
        let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .retry_config(aws_config::retry::RetryConfig::disabled());
        if let Some(region) = &config.region {
            loader = loader.region(aws_config::Region::new(region.clone()));
        }
        if let Some(endpoint) = &config.endpoint_url {
            loader = loader.endpoint_url(endpoint.clone());
        }
        let sdk = loader.load().await;
        let region = sdk.region().map(|r| r.to_string()).ok_or_else(|| {
            FeedError::Config("no AWS region: set [backfill] region, AWS_REGION, or a region in the AWS profile".into())
        })?;
        let interval = Duration::from_secs_f64(1.0 / config.requests_per_second);
        Ok(Backfill { client: Client::new(&sdk), region, config, limiter: RateLimiter::new(interval) })
    }

    pub fn region(&self) -> &str {
        &self.region
    }

    /// The checkpoint this backfill moves.
    pub fn checkpoint_name(&self) -> String {
        checkpoint_name(&self.region)
    }

    /// Read `range` (within LookupEvents' 90 days) into the ledger, oldest slice first.
    /// After each slice is recorded the checkpoint moves to its end.
    pub async fn run<L: Ledger>(
        &self,
        ledger: &L,
        filter: &FilterConfig,
        range: std::ops::Range<DateTime<Utc>>,
        shutdown: &Shutdown,
        mut progress: impl FnMut(BackfillProgress),
    ) -> Result<BackfillReport, FeedError> {
        let (since, until) = (range.start, range.end);
        let oldest = until - chrono::Duration::days(LOOKUP_EVENTS_MAX_AGE_DAYS);
        if since < oldest {
            return Err(FeedError::Config(format!(
                "--since {} is more than {LOOKUP_EVENTS_MAX_AGE_DAYS} days ago; CloudTrail LookupEvents keeps \
                 {LOOKUP_EVENTS_MAX_AGE_DAYS} days: give a time after {} (older events are in the trail's S3 \
                 log files: `driftback reconcile --events FILE`)",
                since.to_rfc3339(),
                oldest.to_rfc3339()
            )));
        }
        let mut report =
            BackfillReport { checkpoint: ledger.checkpoint(&self.checkpoint_name()).await?, ..Default::default() };
        if since >= until {
            return Ok(report);
        }
        let total_secs = (until - since).num_seconds().max(0) as u64;
        let slice = chrono::Duration::seconds(i64::try_from(self.config.slice_secs).unwrap_or(i64::MAX / 1000));
        let mut start = since;
        while start < until {
            let end = (start + slice).min(until);
            let mut token: Option<String> = None;
            loop {
                if shutdown.is_triggered() {
                    return Err(FeedError::Interrupted);
                }
                let (intake, next) = self.page(start, end, token.take(), filter, &mut report).await?;
                report.pages += 1;
                report.events += intake.events.len();
                // A page the store refuses for good is recorded record by record, each refused
                // record as bad input with the store's reason: one hostile record never stops the
                // backfill (what the store refuses even as bad input is logged and counted).
                let page = [(format!("LookupEvents page {start}..{end}"), intake)];
                let receipt = record_parts(ledger, &page, "backfill", shutdown).await?.receipt;
                report.new_events += receipt.new_events;
                report.duplicates += receipt.duplicates;
                report.bad += receipt.bad;
                progress(BackfillProgress {
                    done_secs: (start - since).num_seconds().max(0) as u64,
                    total_secs,
                    events: report.events,
                    pages: report.pages,
                });
                match next {
                    Some(next) => token = Some(next),
                    None => break,
                }
            }
            // Every page of the slice is durable: the checkpoint may pass it.
            ledger.advance_checkpoint(&self.checkpoint_name(), end).await?;
            report.checkpoint = Some(report.checkpoint.map_or(end, |c| c.max(end)));
            progress(BackfillProgress {
                done_secs: (end - since).num_seconds().max(0) as u64,
                total_secs,
                events: report.events,
                pages: report.pages,
            });
            start = end;
        }
        Ok(report)
    }

    /// One page, retried (through the rate limiter) when throttled.
    async fn page(
        &self,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        token: Option<String>,
        filter: &FilterConfig,
        report: &mut BackfillReport,
    ) -> Result<(Intake, Option<String>), FeedError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            self.limiter.wait().await;
            let sent = self
                .client
                .lookup_events()
                .lookup_attributes(
                    LookupAttribute::builder()
                        .attribute_key(LookupAttributeKey::ReadOnly)
                        .attribute_value("false")
                        .build()
                        .map_err(|e| FeedError::Config(e.to_string()))?,
                )
                .start_time(aws_sdk_cloudtrail::primitives::DateTime::from_millis(start.timestamp_millis()))
                .end_time(aws_sdk_cloudtrail::primitives::DateTime::from_millis(end.timestamp_millis()))
                .max_results(PAGE_SIZE)
                .set_next_token(token.clone())
                .send()
                .await;
            match sent {
                Ok(out) => {
                    metrics::counter!(crate::metrics::BACKFILL_REQUESTS, "result" => "ok").increment(1);
                    let mut intake = Intake::default();
                    for event in out.events() {
                        let location =
                            format!("cloudtrail {} event {}", self.region, event.event_id().unwrap_or("(no EventId)"));
                        match event.cloud_trail_event() {
                            Some(text) => intake.add_record_text(text, &location, filter),
                            None => intake.bad.push(crate::BadRecord {
                                location,
                                reason: "LookupEvents returned an event without CloudTrailEvent".into(),
                                raw: format!("{event:?}"),
                            }),
                        }
                    }
                    let next = out.next_token().filter(|t| !t.is_empty()).map(str::to_string);
                    return Ok((intake, next));
                }
                Err(e) => {
                    let code = e.code().unwrap_or_default().to_string();
                    let throttled = matches!(
                        code.as_str(),
                        "ThrottlingException" | "Throttling" | "TooManyRequestsException" | "RequestLimitExceeded"
                    );
                    let transient = throttled
                        || matches!(e, aws_sdk_cloudtrail::error::SdkError::TimeoutError(_))
                        || matches!(e, aws_sdk_cloudtrail::error::SdkError::DispatchFailure(_))
                        || e.raw_response().is_some_and(|r| r.status().is_server_error());
                    let message = crate::error::aws_message(&e);
                    if throttled {
                        report.throttled += 1;
                        metrics::counter!(crate::metrics::BACKFILL_REQUESTS, "result" => "throttled").increment(1);
                    }
                    if !transient || attempt >= self.config.max_attempts {
                        return Err(FeedError::Aws {
                            call: "cloudtrail:LookupEvents",
                            message: format!("{message} (region {}, attempt {attempt})", self.region),
                        });
                    }
                    let backoff = Duration::from_millis(250 * 2u64.pow(attempt.min(7)));
                    tracing::warn!(error = %message, attempt, backoff_ms = backoff.as_millis() as u64, "LookupEvents retried");
                    tokio::time::sleep(backoff).await;
                }
            }
        }
    }
}

/// At most one request per `interval`, across every caller.
#[derive(Debug)]
struct RateLimiter {
    interval: Duration,
    next: tokio::sync::Mutex<tokio::time::Instant>,
}

impl RateLimiter {
    fn new(interval: Duration) -> RateLimiter {
        RateLimiter { interval, next: tokio::sync::Mutex::new(tokio::time::Instant::now()) }
    }

    async fn wait(&self) {
        let mut next = self.next.lock().await;
        tokio::time::sleep_until(*next).await;
        *next = tokio::time::Instant::now() + self.interval;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_rate_limiter_spaces_requests() {
        let limiter = RateLimiter::new(Duration::from_millis(500));
        let start = tokio::time::Instant::now();
        for _ in 0..5 {
            limiter.wait().await;
        }
        // Paused time: exactly four intervals passed between the first and the fifth request.
        assert_eq!(start.elapsed(), Duration::from_millis(2000));
    }

    #[test]
    fn the_limit_is_checked() {
        let config = BackfillConfig { requests_per_second: 3.0, ..BackfillConfig::default() };
        assert!(config.validate().unwrap_err().to_string().contains("at most 2"));
        assert!(BackfillConfig::default().validate().is_ok());
    }
}

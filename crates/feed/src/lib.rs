//! Event sources for the daemon: the SQS consumer, CloudTrail backfill and operations endpoints

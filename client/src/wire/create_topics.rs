//! CreateTopics (API 19): creating the scenario's topics.
//!
//! On the wire: per topic a name, a partition count and a replication factor
//! (-1 = the broker's default) and configs, plus a timeout, answered per topic
//! with an error code and message. The request must reach the controller; a
//! broker that is not answers NOT_CONTROLLER, after which the metadata is
//! refreshed and the request resent (Java's admin `KafkaAdminClient.createTopics`
//! with its `ControllerNodeProvider`). Unlike Java's admin, the call returns
//! only once Metadata shows every partition with a leader: the rig must not
//! start producing into a partition without one.
use bytes::Bytes;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::{ApiKey, CreateTopicsRequest, CreateTopicsResponse, TopicName};
use tracing::{debug, info};

use super::api_versions::ApiVersionsInfo;
use super::client::{broker_retry, decode_body, encode_body, str_bytes, Call, Client, Retrier, Target};
use super::error::{CoordinatorAction, KafkaCode, WireError};

/// CreateTopics: NOT_CONTROLLER means "refresh metadata and resend".
fn create_topics_retry(code: KafkaCode) -> CoordinatorAction {
    if code == KafkaCode::NOT_CONTROLLER {
        CoordinatorAction::RediscoverAndRetry
    } else {
        broker_retry(code)
    }
}

impl Client {
    /// Creates a topic (TOPIC_ALREADY_EXISTS counts as success), then waits
    /// until Metadata shows every partition with a leader. `partitions` /
    /// `replication_factor` of -1 use the broker defaults.
    pub async fn create_topic(
        &mut self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        configs: &[(String, String)],
    ) -> Result<(), WireError> {
        let topic = CreatableTopic::default()
            .with_name(TopicName(str_bytes(name)))
            .with_num_partitions(partitions)
            .with_replication_factor(replication_factor)
            .with_configs(
                configs
                    .iter()
                    .map(|(k, v)| {
                        CreatableTopicConfig::default().with_name(str_bytes(k)).with_value(Some(str_bytes(v)))
                    })
                    .collect(),
            );
        let timeout_ms = i32::try_from(self.config.request_timeout.as_millis()).unwrap_or(i32::MAX);
        let req = CreateTopicsRequest::default().with_topics(vec![topic]).with_timeout_ms(timeout_ms);
        let choose = |info: &ApiVersionsInfo| info.negotiate_request::<CreateTopicsRequest>();
        let encode = |v: i16| encode_body(&req, v, "CreateTopics");
        let decode = |b: Bytes, v: i16| decode_body::<CreateTopicsResponse>(b, v, "CreateTopics");
        let status = |r: &CreateTopicsResponse| match r.topics.iter().find(|t| t.name.0.as_str() == name) {
            Some(t) => (KafkaCode(t.error_code), t.error_message.as_ref().map(|m| m.to_string())),
            None => (KafkaCode::UNKNOWN_SERVER_ERROR, Some(format!("no result for topic {name}"))),
        };
        let created = match self
            .call(&Call {
                api: "CreateTopics",
                api_key: ApiKey::CreateTopics,
                target: Target::Controller,
                choose_version: &choose,
                encode: &encode,
                decode: &decode,
                status: &status,
                classify: create_topics_retry,
                once: false,
            })
            .await
        {
            Ok(_) => true,
            Err(e) if e.kafka_code() == Some(KafkaCode::TOPIC_ALREADY_EXISTS) => {
                debug!(topic = name, "topic already exists");
                false
            }
            Err(e) => return Err(e),
        };

        // Wait for leaders (Java's admin returns before that; the rig
        // must not start producing into a partition without a leader).
        let mut retry = Retrier::exponential(format!("waiting for leaders of topic {name}"), &self.config);
        let names = [name.to_string()];
        loop {
            let md = self.metadata(Some(&names)).await?;
            let problem = match md.topic(name) {
                None => Some("topic missing from Metadata".to_string()),
                Some(t) if t.error.is_some() => t.error.map(|c| c.to_string()),
                Some(t) if t.partitions.is_empty() => Some("no partitions yet".to_string()),
                Some(t) if created && partitions > 0 && t.partitions.len() < partitions as usize => {
                    Some(format!("{} of {partitions} partitions", t.partitions.len()))
                }
                Some(t) => t
                    .partitions
                    .iter()
                    .find(|p| p.leader < 0)
                    .map(|p| format!("partition {} has no leader", p.partition)),
            };
            match problem {
                None => {
                    info!(topic = name, created, "topic ready");
                    return Ok(());
                }
                Some(p) => retry.backoff(WireError::Codec(p)).await?,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_controller_rediscovers() {
        assert_eq!(create_topics_retry(KafkaCode::NOT_CONTROLLER), CoordinatorAction::RediscoverAndRetry);
        assert_eq!(create_topics_retry(KafkaCode::TOPIC_ALREADY_EXISTS), CoordinatorAction::Fail);
    }
}

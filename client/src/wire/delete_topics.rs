//! DeleteTopics (API 20): removing a run's topics from a cluster that outlives the run.
//!
//! On the wire: the topics by name (v1–v5: a list of names; v6: a list of name-or-id
//! entries, here always by name) and a timeout, answered per topic with an error code
//! and, from v5, a message. Like CreateTopics it must reach the controller, and a broker
//! that is not answers NOT_CONTROLLER, after which the metadata is refreshed and the
//! request resent (Java's admin `KafkaAdminClient.deleteTopics`). A topic that is not
//! there (UNKNOWN_TOPIC_OR_PARTITION) counts as deleted. The broker removes the topic's
//! metadata at once and its log segments a little later, in the background
//! (`file.delete.delay.ms`).
use bytes::Bytes;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::{ApiKey, DeleteTopicsRequest, DeleteTopicsResponse, TopicName};
use tracing::info;

use super::api_versions::ApiVersionsInfo;
use super::client::{broker_retry, decode_body, encode_body, str_bytes, Call, Client, Target};
use super::error::{CoordinatorAction, KafkaCode, WireError};

/// DeleteTopics: NOT_CONTROLLER means "refresh metadata and resend".
fn delete_topics_retry(code: KafkaCode) -> CoordinatorAction {
    if code == KafkaCode::NOT_CONTROLLER {
        CoordinatorAction::RediscoverAndRetry
    } else {
        broker_retry(code)
    }
}

/// The request for `names` in version `v`: v6 names each topic in an entry of its own.
fn request(names: &[String], v: i16, timeout_ms: i32) -> DeleteTopicsRequest {
    let req = DeleteTopicsRequest::default().with_timeout_ms(timeout_ms);
    if v >= 6 {
        req.with_topics(
            names.iter().map(|n| DeleteTopicState::default().with_name(Some(TopicName(str_bytes(n))))).collect(),
        )
    } else {
        req.with_topic_names(names.iter().map(|n| TopicName(str_bytes(n))).collect())
    }
}

/// The reply's deciding code: the first topic's error other than "no such topic" (already
/// gone is what was asked), with its name and message.
fn status(r: &DeleteTopicsResponse) -> (KafkaCode, Option<String>) {
    r.responses
        .iter()
        .map(|t| (KafkaCode(t.error_code), t))
        .find(|(c, _)| *c != KafkaCode::NONE && *c != KafkaCode::UNKNOWN_TOPIC_OR_PARTITION)
        .map(|(c, t)| {
            let name = t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
            let msg = t.error_message.as_ref().map(|m| format!(": {m}")).unwrap_or_default();
            (c, Some(format!("topic {name}{msg}")))
        })
        .unwrap_or((KafkaCode::NONE, None))
}

impl Client {
    /// Deletes `names` (a name that does not exist counts as deleted).
    pub async fn delete_topics(&mut self, names: &[String]) -> Result<(), WireError> {
        if names.is_empty() {
            return Ok(());
        }
        let timeout_ms = i32::try_from(self.config.request_timeout.as_millis()).unwrap_or(i32::MAX);
        let choose = |info: &ApiVersionsInfo| info.negotiate_request::<DeleteTopicsRequest>();
        let encode = |v: i16| encode_body(&request(names, v, timeout_ms), v, "DeleteTopics");
        let decode = |b: Bytes, v: i16| decode_body::<DeleteTopicsResponse>(b, v, "DeleteTopics");
        self.call(&Call {
            api: "DeleteTopics",
            api_key: ApiKey::DeleteTopics,
            target: Target::Controller,
            choose_version: &choose,
            encode: &encode,
            decode: &decode,
            status: &status,
            classify: delete_topics_retry,
            once: false,
        })
        .await?;
        info!(topics = ?names, "topics deleted");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;

    #[test]
    fn not_controller_rediscovers() {
        assert_eq!(delete_topics_retry(KafkaCode::NOT_CONTROLLER), CoordinatorAction::RediscoverAndRetry);
    }

    #[test]
    fn v6_names_each_topic_in_an_entry_and_older_versions_list_the_names() {
        let names = ["a".to_string(), "b".to_string()];
        let v6 = request(&names, 6, 100);
        assert_eq!(v6.topics.len(), 2);
        assert!(v6.topic_names.is_empty());
        assert_eq!(v6.topics[1].name.as_ref().map(|n| n.0.to_string()), Some("b".to_string()));
        let v5 = request(&names, 5, 100);
        assert!(v5.topics.is_empty());
        assert_eq!(v5.topic_names.iter().map(|n| n.0.to_string()).collect::<Vec<_>>(), names);
        // Each encodes in its own version.
        encode_body(&v6, 6, "DeleteTopics").unwrap();
        encode_body(&v5, 5, "DeleteTopics").unwrap();
    }

    #[test]
    fn a_topic_already_gone_counts_as_deleted_and_another_error_is_named() {
        let result = |name: &str, code: KafkaCode| {
            DeletableTopicResult::default().with_name(Some(TopicName(str_bytes(name)))).with_error_code(code.0)
        };
        let gone = DeleteTopicsResponse::default()
            .with_responses(vec![result("a", KafkaCode::NONE), result("b", KafkaCode::UNKNOWN_TOPIC_OR_PARTITION)]);
        assert_eq!(status(&gone), (KafkaCode::NONE, None));
        let refused = DeleteTopicsResponse::default()
            .with_responses(vec![result("a", KafkaCode::NONE), result("b", KafkaCode::INVALID_REQUEST)]);
        assert_eq!(status(&refused), (KafkaCode::INVALID_REQUEST, Some("topic b".into())));
    }
}

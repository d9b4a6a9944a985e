//! DescribeConfigs (API 32): a broker's configuration values.
//!
//! On the wire: resources (type and name; a broker is type 4 named by its node
//! id) with optional configuration keys (null = all), answered per resource
//! with an error code and each config's name, value (null when sensitive or
//! unset) and source. A broker's own configs are asked of that broker, as
//! Java's admin `KafkaAdminClient.describeConfigs` does for BROKER resources.
//! The probe reads the coordinator's transaction settings this way (e.g.
//! `transaction.abort.timed.out.transaction.cleanup.interval.ms`).
use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::{ApiKey, DescribeConfigsRequest, DescribeConfigsResponse};

use super::api_versions::ApiVersionsInfo;
use super::client::{broker_retry, decode_body, encode_body, str_bytes, Call, Client, Target};
use super::error::{KafkaCode, WireError};

/// DescribeConfigs resource type of a broker.
pub const RESOURCE_TYPE_BROKER: i8 = 4;

/// Config resource type of a group (`ConfigResource.Type.GROUP`, KIP-848):
/// the group configs such as `share.record.lock.duration.ms`.
pub const RESOURCE_TYPE_GROUP: i8 = 32;

impl Client {
    /// A broker's configuration values (DescribeConfigs, resource type
    /// BROKER, asked of that broker). Empty `keys` = all. Values are `None`
    /// when null (sensitive or unset); keys the broker does not know are
    /// absent from the map.
    pub async fn describe_broker_configs(
        &mut self,
        node_id: i32,
        keys: &[String],
    ) -> Result<BTreeMap<String, Option<String>>, WireError> {
        self.describe_configs(RESOURCE_TYPE_BROKER, &node_id.to_string(), Target::Node(node_id), keys).await
    }

    /// A group's configuration values (resource type GROUP, from any broker):
    /// the values set on the group and, for the others, the broker defaults
    /// they fall back to (e.g. `share.record.lock.duration.ms` from
    /// `group.share.record.lock.duration.ms`).
    pub async fn describe_group_configs(
        &mut self,
        group_id: &str,
        keys: &[String],
    ) -> Result<BTreeMap<String, Option<String>>, WireError> {
        self.describe_configs(RESOURCE_TYPE_GROUP, group_id, Target::Any, keys).await
    }

    async fn describe_configs(
        &mut self,
        resource_type: i8,
        resource_name: &str,
        target: Target<'_>,
        keys: &[String],
    ) -> Result<BTreeMap<String, Option<String>>, WireError> {
        let resource = DescribeConfigsResource::default()
            .with_resource_type(resource_type)
            .with_resource_name(str_bytes(resource_name))
            .with_configuration_keys((!keys.is_empty()).then(|| keys.iter().map(|k| str_bytes(k)).collect()));
        let req = DescribeConfigsRequest::default().with_resources(vec![resource]);
        let choose = |info: &ApiVersionsInfo| info.negotiate_request::<DescribeConfigsRequest>();
        let encode = |v: i16| encode_body(&req, v, "DescribeConfigs");
        let decode = |b: Bytes, v: i16| decode_body::<DescribeConfigsResponse>(b, v, "DescribeConfigs");
        let status = |r: &DescribeConfigsResponse| match r.results.first() {
            Some(res) => (KafkaCode(res.error_code), res.error_message.as_ref().map(|m| m.to_string())),
            None => (KafkaCode::UNKNOWN_SERVER_ERROR, Some("empty DescribeConfigs reply".to_string())),
        };
        let reply = self
            .call(&Call {
                api: "DescribeConfigs",
                api_key: ApiKey::DescribeConfigs,
                target,
                choose_version: &choose,
                encode: &encode,
                decode: &decode,
                status: &status,
                classify: broker_retry,
                once: false,
            })
            .await?;
        Ok(reply
            .body
            .results
            .into_iter()
            .flat_map(|r| r.configs)
            .map(|c| (c.name.to_string(), c.value.map(|v| v.to_string())))
            .collect())
    }
}

//! IncrementalAlterConfigs (API 44): setting a group's configuration, e.g. a
//! share group's `share.auto.offset.reset`, `share.record.lock.duration.ms` or
//! `share.delivery.count.limit` (KIP-848 / KIP-932 group configs).
//!
//! On the wire: resources (type and name; a group is type 32 named by its id,
//! a broker type 4 named by its node id, "" for the cluster-wide default) each
//! with configs to SET (0), DELETE (1), APPEND (2) or SUBTRACT (3), answered
//! per resource with an error code and message (INVALID_CONFIG with the
//! broker's reason for a value outside the bounds the broker sets, e.g.
//! `group.share.min.record.lock.duration.ms`). Java's admin
//! `KafkaAdminClient.incrementalAlterConfigs` sends BROKER resources with a
//! node id to that broker and the others to any broker, which forwards them
//! to the controller; so does this module.
use bytes::Bytes;
use kafka_protocol::messages::incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig};
use kafka_protocol::messages::{ApiKey, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse};

use super::api_versions::ApiVersionsInfo;
use super::client::{broker_retry, decode_body, encode_body, str_bytes, Call, Client, Target};
use super::describe_configs::{RESOURCE_TYPE_BROKER, RESOURCE_TYPE_GROUP};
use super::error::{KafkaCode, WireError};

/// `AlterConfigOp.OpType.SET`.
pub const OP_SET: i8 = 0;
/// `AlterConfigOp.OpType.DELETE`: back to the default.
pub const OP_DELETE: i8 = 1;

impl Client {
    /// Sets (`Some`) or deletes (`None`) configs of one resource. Returns
    /// the resource's error as [`WireError::Kafka`] with the broker's message.
    pub async fn incremental_alter_configs(
        &mut self,
        resource_type: i8,
        resource_name: &str,
        configs: &[(String, Option<String>)],
    ) -> Result<(), WireError> {
        let resource = AlterConfigsResource::default()
            .with_resource_type(resource_type)
            .with_resource_name(str_bytes(resource_name))
            .with_configs(
                configs
                    .iter()
                    .map(|(k, v)| {
                        AlterableConfig::default()
                            .with_name(str_bytes(k))
                            .with_config_operation(if v.is_some() { OP_SET } else { OP_DELETE })
                            .with_value(v.as_deref().map(str_bytes))
                    })
                    .collect(),
            );
        let req = IncrementalAlterConfigsRequest::default().with_resources(vec![resource]);
        let target = match resource_name.parse::<i32>() {
            Ok(node) if resource_type == RESOURCE_TYPE_BROKER => Target::Node(node),
            _ => Target::Any,
        };
        let choose = |info: &ApiVersionsInfo| info.negotiate_request::<IncrementalAlterConfigsRequest>();
        let encode = |v: i16| encode_body(&req, v, "IncrementalAlterConfigs");
        let decode = |b: Bytes, v: i16| decode_body::<IncrementalAlterConfigsResponse>(b, v, "IncrementalAlterConfigs");
        let status = |r: &IncrementalAlterConfigsResponse| match r.responses.first() {
            Some(res) => (KafkaCode(res.error_code), res.error_message.as_ref().map(|m| m.to_string())),
            None => (KafkaCode::UNKNOWN_SERVER_ERROR, Some("empty IncrementalAlterConfigs reply".into())),
        };
        self.call(&Call {
            api: "IncrementalAlterConfigs",
            api_key: ApiKey::IncrementalAlterConfigs,
            target,
            choose_version: &choose,
            encode: &encode,
            decode: &decode,
            status: &status,
            classify: broker_retry,
            once: false,
        })
        .await?;
        Ok(())
    }

    /// Sets configs of a group (resource type GROUP), e.g. a share group's
    /// `share.auto.offset.reset=earliest` before its first member joins.
    pub async fn alter_group_configs(&mut self, group_id: &str, configs: &[(&str, &str)]) -> Result<(), WireError> {
        let configs: Vec<(String, Option<String>)> =
            configs.iter().map(|(k, v)| (k.to_string(), Some(v.to_string()))).collect();
        self.incremental_alter_configs(RESOURCE_TYPE_GROUP, group_id, &configs).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_config_as_bytes() {
        let req = IncrementalAlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
            .with_resource_type(RESOURCE_TYPE_GROUP)
            .with_resource_name(str_bytes("g"))
            .with_configs(vec![AlterableConfig::default()
                .with_name(str_bytes("k"))
                .with_config_operation(OP_SET)
                .with_value(Some(str_bytes("v")))])]);
        let b = encode_body(&req, 1, "IncrementalAlterConfigs").unwrap();
        #[rustfmt::skip]
        assert_eq!(&b[..], &[
            0x02,               // Resources: 1
            32,                 // ResourceType GROUP
            0x02, b'g',         // ResourceName "g"
            0x02,               // Configs: 1
            0x02, b'k', 0,      // Name "k", ConfigOperation SET
            0x02, b'v', 0x00,   // Value "v", tags
            0x00,               // resource tags
            0x00,               // ValidateOnly false
            0x00,               // tags
        ]);
    }
}

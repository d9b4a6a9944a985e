//! ShareGroupDescribe (API 77, v1): a share group as its coordinator sees it.
//!
//! On the wire: group ids (and whether to include authorized operations),
//! answered per group with an error code, the state (`Empty`, `Stable`, `Dead`
//! …), the group and assignment epochs, the assignor and per member its id,
//! epoch, client id and host, subscription and assignment (topic id, name and
//! partitions). It goes to each group's coordinator, as Java's admin
//! `DescribeShareGroupsHandler` sends it; v1 is the only version of 4.1 and
//! later (`ShareGroupDescribeRequest.json`). A group that does not exist is
//! answered GROUP_ID_NOT_FOUND in its entry, which this module returns as the
//! entry's error rather than failing.
use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, GroupId, ShareGroupDescribeRequest, ShareGroupDescribeResponse};
use serde::Serialize;

use super::api_versions::ApiVersionsInfo;
use super::client::{decode_body, encode_body, str_bytes, Call, Client, Target};
use super::error::{coordinator_retry, KafkaCode, WireError};
use super::find_coordinator::KEY_TYPE_GROUP;

/// One member of a described share group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShareMemberDescription {
    pub member_id: String,
    pub member_epoch: i32,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
    /// (topic name, partitions).
    pub assignment: Vec<(String, Vec<i32>)>,
}

/// A share group as its coordinator describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShareGroupDescription {
    pub group_id: String,
    /// The entry's error, e.g. GROUP_ID_NOT_FOUND (rendered as Kafka's name).
    #[serde(serialize_with = "serialize_code")]
    pub error: Option<KafkaCode>,
    pub state: String,
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    pub assignor: String,
    pub members: Vec<ShareMemberDescription>,
}

fn serialize_code<S: serde::Serializer>(code: &Option<KafkaCode>, s: S) -> Result<S::Ok, S::Error> {
    match code {
        Some(c) => s.serialize_some(&c.name()),
        None => s.serialize_none(),
    }
}

fn convert(resp: ShareGroupDescribeResponse) -> Vec<ShareGroupDescription> {
    resp.groups
        .into_iter()
        .map(|g| ShareGroupDescription {
            group_id: g.group_id.0.to_string(),
            error: KafkaCode::from_code(g.error_code),
            state: g.group_state.to_string(),
            group_epoch: g.group_epoch,
            assignment_epoch: g.assignment_epoch,
            assignor: g.assignor_name.to_string(),
            members: g
                .members
                .into_iter()
                .map(|m| ShareMemberDescription {
                    member_id: m.member_id.to_string(),
                    member_epoch: m.member_epoch,
                    client_id: m.client_id.to_string(),
                    client_host: m.client_host.to_string(),
                    subscribed_topic_names: m.subscribed_topic_names.iter().map(|t| t.0.to_string()).collect(),
                    assignment: m
                        .assignment
                        .topic_partitions
                        .iter()
                        .map(|tp| (tp.topic_name.0.to_string(), tp.partitions.clone()))
                        .collect(),
                })
                .collect(),
        })
        .collect()
}

impl Client {
    /// Describes one share group at its coordinator. Coordinator errors of
    /// the entry are retried as [`coordinator_retry`] says; GROUP_ID_NOT_FOUND
    /// and the other codes come back in [`ShareGroupDescription::error`].
    pub async fn describe_share_group(&mut self, group_id: &str) -> Result<ShareGroupDescription, WireError> {
        let req = ShareGroupDescribeRequest::default().with_group_ids(vec![GroupId(str_bytes(group_id))]);
        let choose = |info: &ApiVersionsInfo| info.negotiate_request::<ShareGroupDescribeRequest>();
        let encode = |v: i16| encode_body(&req, v, "ShareGroupDescribe");
        let decode = |b: Bytes, v: i16| decode_body::<ShareGroupDescribeResponse>(b, v, "ShareGroupDescribe");
        // Only coordinator codes decide a retry; the rest are the answer.
        let status = |r: &ShareGroupDescribeResponse| match r.groups.iter().find(|g| g.group_id.0.as_str() == group_id)
        {
            Some(g) if coordinator_retry(KafkaCode(g.error_code)) != super::error::CoordinatorAction::Fail => {
                (KafkaCode(g.error_code), g.error_message.as_ref().map(|m| m.to_string()))
            }
            Some(_) => (KafkaCode::NONE, None),
            None => (KafkaCode::UNKNOWN_SERVER_ERROR, Some(format!("no entry for group {group_id}"))),
        };
        let reply = self
            .call(&Call {
                api: "ShareGroupDescribe",
                api_key: ApiKey::ShareGroupDescribe,
                target: Target::KeyedCoordinator(KEY_TYPE_GROUP, group_id),
                choose_version: &choose,
                encode: &encode,
                decode: &decode,
                status: &status,
                classify: coordinator_retry,
                once: false,
            })
            .await?;
        convert(reply.body)
            .into_iter()
            .find(|g| g.group_id == group_id)
            .ok_or_else(|| WireError::Codec(format!("ShareGroupDescribe reply has no entry for {group_id}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::share_group_describe_response::{
        Assignment, DescribedGroup, Member, TopicPartitions,
    };
    use kafka_protocol::messages::TopicName;
    use kafka_protocol::protocol::Encodable;

    #[test]
    fn request_bytes() {
        let req = ShareGroupDescribeRequest::default().with_group_ids(vec![GroupId(str_bytes("g1"))]);
        let body = encode_body(&req, 1, "ShareGroupDescribe").unwrap();
        // GroupIds: [ "g1" ], IncludeAuthorizedOperations false, no tags.
        assert_eq!(&body[..], &[0x02, 0x03, b'g', b'1', 0x00, 0x00]);
    }

    #[test]
    fn members_and_assignments_by_name() {
        let resp = ShareGroupDescribeResponse::default().with_groups(vec![
            DescribedGroup::default()
                .with_group_id(GroupId(str_bytes("g1")))
                .with_group_state(str_bytes("Stable"))
                .with_group_epoch(2)
                .with_assignment_epoch(2)
                .with_assignor_name(str_bytes("simple"))
                .with_members(vec![Member::default()
                    .with_member_id(str_bytes("m"))
                    .with_member_epoch(2)
                    .with_client_id(str_bytes("c"))
                    .with_subscribed_topic_names(vec![TopicName(str_bytes("in"))])
                    .with_assignment(Assignment::default().with_topic_partitions(vec![TopicPartitions::default()
                        .with_topic_name(TopicName(str_bytes("in")))
                        .with_partitions(vec![0, 1])]))]),
            DescribedGroup::default().with_group_id(GroupId(str_bytes("gone"))).with_error_code(69),
        ]);
        let mut buf = bytes::BytesMut::new();
        resp.encode(&mut buf, 1).unwrap();
        let groups = convert(decode_body(buf.freeze(), 1, "ShareGroupDescribe").unwrap());
        assert_eq!(groups[0].state, "Stable");
        assert_eq!(groups[0].members[0].assignment, vec![("in".to_string(), vec![0, 1])]);
        assert_eq!(groups[0].error, None);
        assert_eq!(groups[1].error, Some(KafkaCode::GROUP_ID_NOT_FOUND));
        let json = serde_json::to_value(&groups[1]).unwrap();
        assert_eq!(json["error"], "GROUP_ID_NOT_FOUND");
    }
}

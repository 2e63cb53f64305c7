from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MessageKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MESSAGE_KIND_UNSPECIFIED: _ClassVar[MessageKind]
    MESSAGE_TEXT: _ClassVar[MessageKind]
    MESSAGE_OFFER: _ClassVar[MessageKind]
    MESSAGE_ACCEPT: _ClassVar[MessageKind]
    MESSAGE_REJECT: _ClassVar[MessageKind]
    MESSAGE_CONTROL: _ClassVar[MessageKind]
MESSAGE_KIND_UNSPECIFIED: MessageKind
MESSAGE_TEXT: MessageKind
MESSAGE_OFFER: MessageKind
MESSAGE_ACCEPT: MessageKind
MESSAGE_REJECT: MessageKind
MESSAGE_CONTROL: MessageKind

class ChannelMessage(_message.Message):
    __slots__ = ("to", "channel", "kind", "body", "ts", "correlation_id", "id")
    FROM_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    TS_FIELD_NUMBER: _ClassVar[int]
    CORRELATION_ID_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    to: str
    channel: str
    kind: MessageKind
    body: bytes
    ts: str
    correlation_id: str
    id: str
    def __init__(self, to: _Optional[str] = ..., channel: _Optional[str] = ..., kind: _Optional[_Union[MessageKind, str]] = ..., body: _Optional[bytes] = ..., ts: _Optional[str] = ..., correlation_id: _Optional[str] = ..., id: _Optional[str] = ..., **kwargs) -> None: ...

class HandoffContext(_message.Message):
    __slots__ = ("task", "current_state", "in_progress", "decisions", "next_steps", "reason")
    TASK_FIELD_NUMBER: _ClassVar[int]
    CURRENT_STATE_FIELD_NUMBER: _ClassVar[int]
    IN_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    DECISIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_STEPS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    task: str
    current_state: str
    in_progress: str
    decisions: _containers.RepeatedScalarFieldContainer[str]
    next_steps: _containers.RepeatedScalarFieldContainer[str]
    reason: str
    def __init__(self, task: _Optional[str] = ..., current_state: _Optional[str] = ..., in_progress: _Optional[str] = ..., decisions: _Optional[_Iterable[str]] = ..., next_steps: _Optional[_Iterable[str]] = ..., reason: _Optional[str] = ...) -> None: ...

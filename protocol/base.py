"""The base of every message: a frozen-shape Struct tagged by its class name."""
import msgspec


class Msg(msgspec.Struct, tag_field="type", tag=True, kw_only=True, forbid_unknown_fields=True):
    """Base of all message bodies. The tag (class name) selects the type when decoding."""

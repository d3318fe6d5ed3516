"""Chat models: the offline extractive model, the factory for real models, metering and the request guard."""

from orc.models.factory import build_chat_model, model_label
from orc.models.guard import allow_model_requests, forbid_model_requests, model_requests_allowed
from orc.models.metering import ModelMeter
from orc.models.offline import OFFLINE_MODEL_NAME, OfflineExtractiveModel

__all__ = [
    "OFFLINE_MODEL_NAME",
    "ModelMeter",
    "OfflineExtractiveModel",
    "allow_model_requests",
    "build_chat_model",
    "forbid_model_requests",
    "model_label",
    "model_requests_allowed",
]

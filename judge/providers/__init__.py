"""Judge providers behind one small interface (see `base`); `registry` maps model specs to
them. The request types are re-exported from `judge.request`, where they live."""

from judge.providers.base import CallCache as CallCache
from judge.providers.base import CallRecord as CallRecord
from judge.providers.base import JudgeRequest as JudgeRequest
from judge.providers.base import ModelParams as ModelParams
from judge.providers.base import Provider as Provider
from judge.providers.base import ProviderFailure as ProviderFailure
from judge.providers.base import ProviderResponse as ProviderResponse

__all__ = ["CallCache", "CallRecord", "JudgeRequest", "ModelParams", "Provider",
           "ProviderFailure", "ProviderResponse"]

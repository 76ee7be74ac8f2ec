"""Names of the things a route can do; channels declare which they serve."""

MODELS = "models"
CHAT = "chat"
RESPONSES = "responses"
RESPONSES_STORED = "responses.stored"  # reading or deleting a kept response (answered by its protocol)
EMBEDDINGS = "embeddings"
COUNT_TOKENS = "count_tokens"
IMAGES_GENERATIONS = "images.generations"
IMAGES_EDITS = "images.edits"
AUDIO_SPEECH = "audio.speech"
AUDIO_TRANSCRIPTIONS = "audio.transcriptions"
REALTIME = "realtime"  # a WebSocket session relayed message by message
COMPLETIONS = "completions"  # legacy text completions
MODERATIONS = "moderations"
AUDIO_TRANSLATIONS = "audio.translations"
RERANK = "rerank"

ALL = (
    MODELS,
    CHAT,
    RESPONSES,
    EMBEDDINGS,
    COUNT_TOKENS,
    IMAGES_GENERATIONS,
    IMAGES_EDITS,
    AUDIO_SPEECH,
    AUDIO_TRANSCRIPTIONS,
    REALTIME,
    COMPLETIONS,
    MODERATIONS,
    AUDIO_TRANSLATIONS,
    RERANK,
)

# The error code of a request for an endpoint no channel of the model serves (the
# protocol may then answer it itself: see ClientProtocol.answer_locally).
UNSUPPORTED_ENDPOINT = "unsupported_endpoint"

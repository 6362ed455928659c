"""Source-code curation, engine-free: languages, licences, file measures and secrets of source files.

- `languages`: language from file name, extension or shebang (identify's mapping).
- `licenses`: SPDX tags and notices in headers, licence files matched to SPDX texts, licence classes.
- `repository`: which licence applies to which file of a repository; folder repositories.
- `paths`, `stats`, `comments`: lock files, vendored and generated names; line, character and
  encoded-data measures; comment share.
- `secrets`: where API keys, tokens, private keys and passwords are (detect-secrets' detectors).

The stages are `curation.stages.code_filters` and `curation.stages.code_secrets`; the reader is
`curation.readers.code`.
"""

"""Bearer-token auth for every route but /v1/version; a missing or wrong token is a 401."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Annotated

from fastapi import HTTPException, Security, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

bearer_scheme = HTTPBearer(
    auto_error=False, description="The token in the agent's state directory (file 'token')"
)


def token_guard(token: str) -> Callable[[HTTPAuthorizationCredentials | None], None]:
    expected = token.encode()

    def require_token(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Security(bearer_scheme)],
    ) -> None:
        if credentials is None or not hmac.compare_digest(credentials.credentials.encode(), expected):
            raise HTTPException(
                status_code=status.HTTP_401_UNAUTHORIZED,
                detail="a valid bearer token is required (Authorization: Bearer <token from the agent's token file>)",
                headers={"WWW-Authenticate": "Bearer"},
            )

    return require_token

"""One prompt as a turn, for the session manager: the session taken for this process (its lease),
what other processes stored taken in and shown, the turn's system prompt, and the turn run."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import anyio
import anyio.abc
import msgspec

from tether.engine import events as ev
from tether.engine.context_window import ContextWindow
from tether.engine.grants import Grant, GrantBook, Grants, Lasting
from tether.engine.history import UserPart, prompt_text
from tether.engine.instruction_files import instruction_paths
from tether.engine.sandbox.acts_later import acts_later
from tether.engine.sandbox.detect import detect
from tether.engine.seam import TodoGroup
from tether.engine.sessions.deps import EngineDeps, Front
from tether.engine.sessions.first_answer import FirstAnswer
from tether.engine.sessions.lease import Holder, lease_seconds
from tether.engine.sessions.runtime import SessionRuntime
from tether.engine.sessions.state import (
    ALLOW_ALL_MODE,
    MODES,
    READ_ONLY_MODE,
    Session,
    UsageTotals,
    with_window_choices,
)
from tether.engine.skills.skill_catalog import catalog
from tether.engine.skills.skill_discovery import Discovery, discover
from tether.engine.skills.skill_roots import SkillRoot
from tether.engine.system_prompt import project_context, system_prompt
from tether.engine.turn import Turn, TurnConfig, interrupted_results

if TYPE_CHECKING:
    from tether.engine.mcp.host import McpHost

log = logging.getLogger("tether.sessions")

T = TypeVar("T")
Emit = Callable[[Session, ev.Event], Awaitable[None]]
Persist = Callable[[Session], Awaitable[None]]


class TurnRunner:
    def __init__(
        self,
        deps: EngineDeps,
        front: Front,
        background: anyio.abc.TaskGroup,
        *,
        emit: Emit,
        persist: Persist,
        first_answer: FirstAnswer | None = None,
    ) -> None:
        self.deps = deps
        self.front = front
        self._background = background
        self._emit = emit
        self._persist = persist
        self._told_damage = False
        self._first_answer = first_answer or FirstAnswer()

    async def run(
        self,
        runtime: SessionRuntime,
        parts: list[UserPart],
        scope: anyio.CancelScope,
        *,
        sent: list[UserPart] | None = None,
    ) -> ev.StopReason:
        """One prompt as a turn (the model gets `sent` for it when given); TurnFailed when the
        provider cannot serve it, HeldElsewhere when another process runs a turn of this
        session."""
        self._first_answer.prompted()
        try:
            return await self._run(runtime, parts, scope, parts if sent is None else sent)
        finally:
            self._first_answer.answered()

    async def _run(
        self,
        runtime: SessionRuntime,
        parts: list[UserPart],
        scope: anyio.CancelScope,
        given: list[UserPart],
    ) -> ev.StopReason:
        s = runtime.session
        await self.deps.store.load_history(s)
        holder = str(Holder.me())
        await self._catch_up(s, holder)
        return await self._holding(s, holder, lambda: self._fresh(runtime, parts, scope, given))

    async def resume(
        self, runtime: SessionRuntime, scope: anyio.CancelScope
    ) -> ev.StopReason | None:
        """Go on with the session's last turn if it did not finish (/retry); None when it did."""
        s = runtime.session
        await self.deps.store.load_history(s)
        holder = str(Holder.me())
        await self._catch_up(s, holder)
        if s.state.unfinished is None:
            await self.deps.store.leases.release(s.id, holder)
            return None
        return await self._holding(s, holder, lambda: self._resumed(runtime, scope))

    async def compact(self, runtime: SessionRuntime, focus: str | None) -> int | None:
        """Summarise the conversation so far (/compact): the messages the summary stands for,
        0 when no summary came, None when there was nothing to summarise."""
        s = runtime.session
        await self.deps.store.load_history(s)
        holder = str(Holder.me())
        await self._catch_up(s, holder)

        async def summarise() -> int | None:
            before = s.state.compacted_upto
            if len(s.history) <= before:
                return None
            window = await self._context(runtime)
            done = await window.compact(len(s.history), focus)
            return len(s.history) - before if done else 0

        return await self._holding(s, holder, summarise)

    async def clear(self, runtime: SessionRuntime) -> int:
        """Start the model on a fresh context (/clear): the history so far stays in the
        session and the store, and no request carries it again; how many messages it left."""
        s = runtime.session
        await self.deps.store.load_history(s)
        holder = str(Holder.me())
        await self._catch_up(s, holder)

        async def clear() -> int:
            left = len(s.history) - s.state.compacted_upto + (s.state.summary is not None)
            s.state.compacted_upto, s.state.summary, s.state.unfinished = len(s.history), None, None
            await self._persist(s)
            return left

        return await self._holding(s, holder, clear)

    async def context_used(self, runtime: SessionRuntime) -> tuple[int, int]:
        """(tokens the next request would carry, the model's window), for /status."""
        await self.deps.store.load_history(runtime.session)
        window = await self._context(runtime)
        return window.used(), window.model.info.context_window

    async def side_turn(
        self, runtime: SessionRuntime, parts: list[UserPart], scope: anyio.CancelScope
    ) -> ev.StopReason:
        """A turn on a copy of the session in read-only mode (/btw): shown and recorded in the
        session's events, while its history and the store's stay as they were."""
        s = runtime.session
        await self.deps.store.load_history(s)
        state = msgspec.structs.replace(
            s.state,
            mode=READ_ONLY_MODE,
            grants=Grants(),
            undo=[],
            unfinished=None,
            todos=[TodoGroup(list(g.items)) for g in s.state.todos],  # its own copy
            last_turn=UsageTotals(),
            usage=UsageTotals(),  # counted apart, as its cost is
        )
        side = Session(s.id, s.cwd, state, history=list(s.history))
        model = runtime.model(self.deps.catalog)
        config = await self._config(runtime, (await self._skills(s))[1], READ_ONLY_MODE)

        async def kept_apart(_: Session) -> None:
            return None

        turn = Turn(
            side,
            model=model,
            registry=runtime.registry(),
            ctx=self.front.capabilities(s, model),
            emit=lambda e: self._emit(s, e),
            persist=kept_apart,
            config=config,
        )
        stop = await turn.run(parts, scope)
        await self._persist(s)  # the events it showed
        return stop

    async def _holding(self, s: Session, holder: str, work: Callable[[], Awaitable[T]]) -> T:
        """Do `work` holding the session's lease (renewed meanwhile), then give it back."""
        renewing = anyio.CancelScope()
        self._background.start_soon(self._renew_lease, s.id, holder, renewing)
        try:
            return await work()
        finally:
            renewing.cancel()
            with anyio.CancelScope(shield=True):
                await self.deps.store.leases.release(s.id, holder)

    async def _catch_up(self, s: Session, holder: str) -> None:
        """Take the session's lease, and take in what other processes stored meanwhile: their
        messages join the history, their events are shown to this client first."""
        caught = await self.deps.store.leases.take(s, holder, lease_seconds())
        s.history.extend(caught.messages)
        s.message_seqs.extend(caught.seqs)
        if caught.state is not None:
            s.state = with_window_choices(caught.state, s.state)
            s.title = s.title or caught.title
        s.event_end = caught.event_end
        if caught.replay.items:
            note = "Earlier in this session, from another window:"
            await self.front.show(s.id, ev.Notice("info", note))
            await self.front.catch_up(s.id, caught.replay)

    async def _renew_lease(self, session_id: str, holder: str, scope: anyio.CancelScope) -> None:
        seconds = lease_seconds()
        with scope:
            while True:
                await anyio.sleep(seconds / 3)
                try:
                    await self.deps.store.leases.renew(session_id, holder, seconds)
                except Exception:  # the turn goes on; the lease may lapse
                    log.exception("renewing the lease of session %s", session_id)

    async def _fresh(
        self,
        runtime: SessionRuntime,
        parts: list[UserPart],
        scope: anyio.CancelScope,
        sent: list[UserPart],
    ) -> ev.StopReason:
        s = runtime.session
        s.history.extend(interrupted_results(s.history))  # a killed turn's calls, answered
        if runtime.reopened or s.state.notices:  # told first, and kept there in order
            from tether.engine.sessions import reopening

            sent = [*await reopening.tell(runtime, lambda e: self._emit(s, e)), *sent]
        # the client showed it; stored once, in the history message, when that is what it sent
        s.record(ev.UserPrompted(parts, message=len(s.history) if sent is parts else None))
        text = prompt_text(parts)
        if s.title is None and text:
            s.title = text.splitlines()[0][:80]
            await self._emit(s, ev.TitleChanged(s.title))
        turn = await self._turn(runtime)
        return await self._ended(s, await turn.run(sent, scope))

    async def _resumed(self, runtime: SessionRuntime, scope: anyio.CancelScope) -> ev.StopReason:
        turn = await self._turn(runtime)
        return await self._ended(runtime.session, await turn.resume(scope))

    async def _ended(self, s: Session, stop: ev.StopReason) -> ev.StopReason:
        if stop not in ("end_turn", "refusal"):  # (a refusal says so itself)
            with anyio.CancelScope(shield=True):
                await self._emit(s, ev.TurnEnded(stop))  # kept: a reload shows how it ended
        await self._persist(s)
        return stop

    async def _turn(self, runtime: SessionRuntime) -> Turn:
        s = runtime.session
        if runtime.mcp is not None and runtime.mcp.starting():
            await self._mcp_ready(s, runtime.mcp)
        model = runtime.model(self.deps.catalog)
        roots, found = await self._skills(s)
        ctx = self.front.capabilities(s, model)
        # The skills' directories: readable for their resources, every change to them asked;
        # so is every change to what acts later (instruction files, agents' and editors'
        # configs: a confined command may not touch them, the file tools ask).
        ctx.skills = tuple(roots)
        ctx.skill_writes, ctx.skill_allow_write = s.state.skill_writes, self.deps.skills.allow_write
        ctx.policy.read_roots = found.places(roots)
        ctx.policy.guarded = [
            *ctx.policy.read_roots,
            *acts_later(ctx.policy.roots),
            *await self._instruction_paths(runtime),
        ]
        turn = Turn(
            s,
            model=model,
            registry=runtime.registry(),
            ctx=ctx,
            emit=self._answering(s),
            persist=self._persist,
            config=await self._config(runtime, found),
            grants=await self.grants(s),
            mode=_once(s),
        )
        await self._tell_problems(s)
        return turn

    def _answering(self, s: Session) -> Callable[[ev.Event], Awaitable[None]]:
        """The turn's events shown; the first of the model's answer lets the chores go."""

        async def emit(event: ev.Event) -> None:
            if isinstance(event, ev.TextDelta | ev.ThoughtDelta | ev.ToolStarted):
                self._first_answer.answered()
            await self._emit(s, event)

        return emit

    async def grants(self, s: Session) -> GrantBook:
        """The session's grants and its project's (the project is the session's folder)."""
        store = self.deps.store

        async def keep(grant: Grant) -> None:
            await store.grants.keep(s.cwd, grant)

        lasting: Lasting = "project" if s.state.always == "project" else "session"
        project = await store.grants.listed(s.cwd)
        return GrantBook(s.state.grants, project, lasting=lasting, keep=keep)

    async def _context(self, runtime: SessionRuntime) -> ContextWindow:
        """The session's context window as its next request would see it (for /compact)."""
        s = runtime.session
        config = await self._config(runtime, (await self._skills(s))[1])
        return ContextWindow(
            s,
            runtime.model(self.deps.catalog),
            system=config.system,
            tools=runtime.registry().specs(),
            emit=lambda e: self._emit(s, e),
            persist=self._persist,
            keep=config.keep_recent_results,
            summary_prompt=config.summary_prompt,
        )

    async def warm(self, runtime: SessionRuntime) -> None:
        """Made ready in the background as a session opens, so that its first prompt waits for
        none of it: the project snapshot (git runs meanwhile), the model's adapter and HTTP
        client (made on a thread, off the event loop); then, once a first prompt's answer
        started (first_answer.py), the sandbox's probe, which only commands wait for."""
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.snapshot, runtime)
                tg.start_soon(anyio.to_thread.run_sync, runtime.model, self.deps.catalog)
                tg.start_soon(self._probe)
        except Exception:  # a convenience: the first prompt does whatever is left
            log.exception("warming up session %s", runtime.session.id)

    async def _probe(self) -> None:
        await self._first_answer.wait()
        await anyio.to_thread.run_sync(detect, self.deps.sandbox.mechanism)

    async def snapshot(self, runtime: SessionRuntime) -> str:
        """The project snapshot. The repositories of the session's roots are found first, as
        it opens (a stored session too), and kept: tether's own git runs on those only."""
        s = runtime.session
        async with runtime.snapshot:
            for root in s.state.roots:
                await runtime.repositories.afind(Path(root))
            repo = await runtime.repositories.afind(Path(s.cwd))
            if s.state.context is None:
                extra = self.deps.turn.instructions
                context, files = await project_context(Path(s.cwd), repo, extra)
                s.state.context, s.state.instruction_files = context, files
            return s.state.context

    async def _mcp_ready(self, s: Session, mcp: McpHost) -> None:
        """The session's MCP servers still starting, waited for (bounded): the first request
        offers their tools, or the model would call one that is not there yet."""
        from tether.engine.mcp.host import READY_WAIT

        names = ", ".join(mcp.starting())
        await self._emit(s, ev.Notice("info", f"Waiting for MCP servers to start: {names}"))
        late = await mcp.settle()
        if late:
            text = "This turn goes on without their tools; `/mcp` shows how they are."
            title = f"MCP servers not ready after {READY_WAIT:.0f} s: {', '.join(late)}"
            await self._emit(s, ev.Notice("warning", title, text))

    async def _instruction_paths(self, runtime: SessionRuntime) -> list[Path]:
        """Every instruction file the session reads, the configured ones and the user's
        included (acts_later covers the project's own names, not these)."""
        cwd = Path(runtime.session.cwd)
        repo = await runtime.repositories.afind(cwd)
        top = repo.top if repo is not None else None
        return instruction_paths(cwd, top, self.deps.turn.instructions)

    async def _skills(self, s: Session) -> tuple[list[SkillRoot], Discovery]:
        """The session's skills roots and what they hold, found afresh: once per turn, at its
        start, so the system prompt stays the same for all its rounds."""
        roots = self.deps.skills.roots(Path(s.cwd))
        return roots, await anyio.to_thread.run_sync(discover, roots)

    async def _config(
        self, runtime: SessionRuntime, skills: Discovery, mode: str | None = None
    ) -> TurnConfig:
        s = runtime.session
        context = await self.snapshot(runtime)
        base = self.deps.turn
        mode = mode or s.state.mode
        mcp = runtime.mcp.instructions() if runtime.mcp and base.mcp_instructions else ""
        system = system_prompt(
            base.system,
            context,
            mode,
            MODES[mode][1],
            base.sections,
            mcp,
            catalog(skills),
            base.tool_rules,
        )
        return msgspec.structs.replace(base, system=system)

    async def _tell_problems(self, s: Session) -> None:
        """Configuration problems found at startup, and a damaged session database, shown
        once, in the first turn."""
        warnings = self.deps.catalog.warnings
        if warnings:
            text = "\n".join(warnings)
            await self._emit(s, ev.Notice("warning", "tether's configuration has problems", text))
            warnings.clear()
        store = self.deps.store
        if store.damaged is not None and not self._told_damage:
            self._told_damage = True
            text = (
                f"{store.damaged}. This run keeps its sessions in memory only (earlier ones "
                "cannot be loaded). `tether doctor --move-damaged-store` moves the file aside, "
                "keeping it, so the next start makes a new one."
            )
            await self._emit(s, ev.Notice("error", "tether's session database is damaged", text))


def _once(s: Session) -> str | None:
    """`allow-all` for the turn `/yolo once` was armed for (used up as the turn is made: it
    ends with this turn, however it ends); None: the session's mode."""
    once, s.yolo_once = s.yolo_once, False
    # Switched to read-only since `/yolo once`: nothing is to change, whatever was armed.
    return ALLOW_ALL_MODE if once and s.state.mode != READ_ONLY_MODE else None

"""MinAtar Seaquest in TensorFlow ops.

A submarine (front and back cell) moves in rows 0-8 and shoots sideways;
+1 per enemy fish or submarine shot; enemy submarines shoot back. Divers
cross the screen and are picked up (at most 6); surfacing (row 0) with a
diver refills the oxygen, costs a diver, ramps up the difficulty, and with
6 divers pays the remaining oxygen (``oxygen * 10 // 200``) and empties the
submarine. The episode ends on touching an enemy or an enemy bullet, on
running out of oxygen, or on surfacing without a diver. Channels:
sub_front, sub_back, friendly_bullet, trail, enemy_bullet, enemy_fish,
enemy_sub, oxygen_guage, diver_guage, diver. As MinAtar's ``seaquest.py``,
quirks included (surfacing with 6 divers leaves -1).

MinAtar keeps Python lists; here each is a fixed number of slots, in list
order (live slots first, compacted after removals). MinAtar's loops over
the player's bullets and the divers are unrolled in its order; in the
loops over fish and enemy submarines only the friendly bullets they hit
couple one enemy to the next, and ``_claims`` resolves that at once as the
loop would, so ties (two enemies on one cell) go as in MinAtar. The
capacities cannot overflow: an enemy lives at most 30 frames and at most
one spawns per frame (32 fish, 32 submarines); a submarine fires every 11
frames and its bullet flies at most 10, so at most one bullet per
submarine of the last 10 frames is alive (48); divers spawn every 30
frames and live at most about 60 (4); the player's bullets fly at most 10
frames, fired at most every 5 (4).
"""

from typing import Dict, Tuple

import tensorflow as tf

from alf_rl.environments.minatar.game import (
    DOWN,
    FIRE,
    LEFT,
    RIGHT,
    UP,
    MinAtarGame,
    State,
    cells,
    paint,
    randint,
    stack_channels,
)

_MAX_OXYGEN = 200
_SPAWN_SPEED = 20
_DIVER_SPAWN_SPEED = 30
_MOVE_INTERVAL = 5
_SHOT_COOL_DOWN = 5
_ENEMY_SHOT_INTERVAL = 10
_DIVER_MOVE_INTERVAL = 5

#: Slots per list: (name, capacity, fields besides x, y, alive).
_LISTS = {
    'fb': (4, ('lr',)),  # friendly bullets (lr: moving right)
    'eb': (48, ('lr',)),  # enemy bullets
    'fish': (32, ('lr', 'timer')),
    'subs': (32, ('lr', 'timer', 'shot')),
    'divers': (4, ('lr', 'timer')),
}

Items = Dict[str, tf.Tensor]


def _get(state: State, name: str) -> Items:
    """The slots of list ``name``: ``x, y, alive`` and its fields, each
    [B, capacity]."""
    keys = ('x', 'y', 'alive') + _LISTS[name][1]
    return {k: state['%s_%s' % (name, k)] for k in keys}


def _put(state: State, name: str, items: Items) -> State:
    """``state`` with list ``name`` replaced by ``items``."""
    state = dict(state)
    for k, v in items.items():
        state['%s_%s' % (name, k)] = v
    return state


def _compact(items: Items, capacity: int) -> Items:
    """Live slots first, in their order (a stable sort), cut to
    ``capacity``."""
    order = tf.argsort(
        tf.cast(tf.logical_not(items['alive']), tf.int32), axis=1, stable=True
    )[:, :capacity]
    return {k: tf.gather(v, order, batch_dims=1) for k, v in items.items()}


def _append(items: Items, cond: tf.Tensor, values: Items) -> Items:
    """``list += [values]`` where ``cond`` [B] (the list compacted; a full
    list is left as is). ``values``: [B] per field, ``alive`` excluded."""
    alive = items['alive']
    count = tf.reduce_sum(tf.cast(alive, tf.int32), axis=1)
    slot = tf.logical_and(
        tf.equal(tf.range(alive.shape[1])[None], count[:, None]),
        cond[:, None],
    )
    out = {
        k: tf.where(slot, values[k][:, None], v)
        for k, v in items.items()
        if k != 'alive'
    }
    out['alive'] = tf.logical_or(alive, slot)
    return out


def _step_x(x: tf.Tensor, lr: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    """``x += 1 if lr else -1``; returns x and whether it left the grid."""
    x = x + tf.where(lr, 1, -1)
    return x, tf.logical_or(x < 0, x > 9)


def _first(match: tf.Tensor) -> tf.Tensor:
    """[B, N] bool: the first True of each row of ``match`` [B, N]."""
    return tf.logical_and(
        match, tf.equal(tf.cumsum(tf.cast(match, tf.int32), axis=1), 1)
    )


def _at(items: Items, x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
    """[B, N] bool: live slots on the cell (x, y) ([B] each)."""
    return tf.logical_and(
        items['alive'],
        tf.logical_and(
            tf.equal(items['x'], x[:, None]), tf.equal(items['y'], y[:, None])
        ),
    )


def _spawn(state: State, draws: tf.Tensor) -> State:
    """MinAtar's ``_spawn_enemy`` (draws 0-2) and ``_spawn_diver`` (the
    next two draws: 3-4, or 0-1 when no enemy spawn drew)."""
    fish, subs = _get(state, 'fish'), _get(state, 'subs')
    now = tf.equal(state['e_spawn_timer'], 0)
    lr, is_sub = draws[:, 0] < 0.5, draws[:, 1] < 1.0 / 3.0
    y = randint(draws[:, 2], 8) + 1
    clash = tf.zeros_like(now)
    for items in (subs, fish):
        row = tf.logical_and(items['alive'], tf.equal(items['y'], y[:, None]))
        other_way = tf.not_equal(items['lr'], lr[:, None])
        clash |= tf.reduce_any(tf.logical_and(row, other_way), axis=1)
    ok = tf.logical_and(now, tf.logical_not(clash))
    new = dict(x=tf.where(lr, 0, 9), y=y, lr=lr, timer=state['move_speed'])
    fish = _append(fish, tf.logical_and(ok, tf.logical_not(is_sub)), new)
    new['shot'] = tf.fill(tf.shape(y), _ENEMY_SHOT_INTERVAL)
    subs = _append(subs, tf.logical_and(ok, is_sub), new)
    diver_now = tf.equal(state['d_spawn_timer'], 0)
    diver_draws = tf.where(now[:, None], draws[:, 3:5], draws[:, 0:2])
    lr = diver_draws[:, 0] < 0.5
    divers = _append(
        _get(state, 'divers'),
        diver_now,
        dict(
            x=tf.where(lr, 0, 9),
            y=randint(diver_draws[:, 1], 8) + 1,
            lr=lr,
            timer=tf.fill(tf.shape(lr), _DIVER_MOVE_INTERVAL),
        ),
    )
    state = _put(
        _put(_put(state, 'fish', fish), 'subs', subs), 'divers', divers
    )
    state['e_spawn_timer'] = tf.where(
        now, state['e_spawn_speed'], state['e_spawn_timer']
    )
    state['d_spawn_timer'] = tf.where(
        diver_now, _DIVER_SPAWN_SPEED, state['d_spawn_timer']
    )
    return state


def _player(state: State, action: tf.Tensor) -> State:
    """Fire (a bullet from the front, every 5 frames at most) or move."""
    x, y, facing = state['sub_x'], state['sub_y'], state['sub_or']
    fire = tf.logical_and(
        tf.equal(action, FIRE), tf.equal(state['shot_timer'], 0)
    )
    state = _put(
        state,
        'fb',
        _append(_get(state, 'fb'), fire, dict(x=x, y=y, lr=facing)),
    )
    left, right = tf.equal(action, LEFT), tf.equal(action, RIGHT)
    state['shot_timer'] = tf.where(fire, _SHOT_COOL_DOWN, state['shot_timer'])
    state['sub_x'] = tf.where(
        left, tf.maximum(x - 1, 0), tf.where(right, tf.minimum(x + 1, 9), x)
    )
    state['sub_or'] = tf.where(left, False, tf.where(right, True, facing))
    state['sub_y'] = tf.where(
        tf.equal(action, UP),
        tf.maximum(y - 1, 0),
        tf.where(tf.equal(action, DOWN), tf.minimum(y + 1, 8), y),
    )
    return state


def _columns(items: Items) -> Dict[str, list]:
    """Each [B, N] field as a list of N [B] columns (for unrolled loops)."""
    return {k: tf.unstack(v, axis=1) for k, v in items.items()}


def _stacked(columns: Dict[str, list]) -> Items:
    """Inverse of ``_columns``."""
    return {k: tf.stack(v, axis=1) for k, v in columns.items()}


def _shoot_enemies(state: State) -> Tuple[State, tf.Tensor]:
    """MinAtar's friendly-bullet loop (last bullet first): each moves; off
    the grid it vanishes; on the cell of the first fish, else the first
    enemy submarine, both vanish and pay 1."""
    bullets = _columns(_get(state, 'fb'))
    fish, subs = _get(state, 'fish'), _get(state, 'subs')
    reward = tf.zeros_like(state['sub_x'], tf.float32)
    for j in reversed(range(len(bullets['x']))):
        alive = bullets['alive'][j]
        x, out = _step_x(bullets['x'][j], bullets['lr'][j])
        bullets['x'][j] = tf.where(alive, x, bullets['x'][j])
        live = tf.logical_and(alive, tf.logical_not(out))
        hit_fish = _first(
            tf.logical_and(_at(fish, x, bullets['y'][j]), live[:, None])
        )
        any_fish = tf.reduce_any(hit_fish, axis=1)
        hit_sub = _first(
            tf.logical_and(
                _at(subs, x, bullets['y'][j]),
                tf.logical_and(live, tf.logical_not(any_fish))[:, None],
            )
        )
        hit = tf.logical_or(any_fish, tf.reduce_any(hit_sub, axis=1))
        fish['alive'] = tf.logical_and(fish['alive'], tf.logical_not(hit_fish))
        subs['alive'] = tf.logical_and(subs['alive'], tf.logical_not(hit_sub))
        bullets['alive'][j] = tf.logical_and(live, tf.logical_not(hit))
        reward += tf.cast(hit, tf.float32)
    state = _put(_put(state, 'fish', fish), 'subs', subs)
    return _put(state, 'fb', _stacked(bullets)), reward


def _rescue(state: State) -> State:
    """MinAtar's diver loop (last diver first): a diver on the submarine's
    cell boards while fewer than 6 are aboard; others move every 6
    frames (and may board then)."""
    divers = _columns(_get(state, 'divers'))
    x0, y0, count = state['sub_x'], state['sub_y'], state['diver_count']
    for k in reversed(range(len(divers['x']))):
        alive, x, y = divers['alive'][k], divers['x'][k], divers['y'][k]
        room = count < 6
        on = tf.logical_and(tf.equal(x, x0), tf.equal(y, y0))
        board = tf.logical_and(alive, tf.logical_and(on, room))
        rest = tf.logical_and(alive, tf.logical_not(board))
        move = tf.logical_and(rest, tf.equal(divers['timer'][k], 0))
        divers['timer'][k] = tf.where(
            move,
            _DIVER_MOVE_INTERVAL,
            tf.where(rest, divers['timer'][k] - 1, divers['timer'][k]),
        )
        moved, out = _step_x(x, divers['lr'][k])
        divers['x'][k] = tf.where(move, moved, x)
        on = tf.logical_and(tf.equal(moved, x0), tf.equal(y, y0))
        board_2 = tf.logical_and(
            tf.logical_and(move, tf.logical_not(out)), tf.logical_and(on, room)
        )
        gone = tf.logical_or(
            board, tf.logical_or(board_2, tf.logical_and(move, out))
        )
        divers['alive'][k] = tf.logical_and(alive, tf.logical_not(gone))
        count += tf.cast(tf.logical_or(board, board_2), tf.int32)
    state = _put(state, 'divers', _stacked(divers))
    state['diver_count'] = count
    return state


def _claims(
    check: tf.Tensor, x: tf.Tensor, y: tf.Tensor, bullets: Items
) -> tf.Tensor:
    """[B, N, F] bool: which friendly bullet each enemy takes.

    MinAtar's loop visits the enemies last slot first, and each that
    ``check``s ([B, N]) takes the first bullet still on its cell (x, y)
    ([B, N]); so among the enemies on one cell, the k-th visited takes
    the k-th bullet there in list order (if any): computed at once.
    """
    n = x.shape[1]
    same = tf.logical_and(
        tf.logical_and(check[:, :, None], check[:, None, :]),
        tf.logical_and(
            tf.equal(x[:, :, None], x[:, None, :]),
            tf.equal(y[:, :, None], y[:, None, :]),
        ),
    )
    visited_before = tf.constant([[j > i for j in range(n)] for i in range(n)])
    rank = tf.reduce_sum(
        tf.cast(tf.logical_and(same, visited_before), tf.int32), axis=2
    )
    on_cell = tf.logical_and(
        bullets['alive'][:, None, :],
        tf.logical_and(
            tf.equal(bullets['x'][:, None, :], x[:, :, None]),
            tf.equal(bullets['y'][:, None, :], y[:, :, None]),
        ),
    )
    bullet_rank = tf.cumsum(tf.cast(on_cell, tf.int32), axis=2) - 1
    return tf.logical_and(
        tf.logical_and(on_cell, check[:, :, None]),
        tf.equal(bullet_rank, rank[:, :, None]),
    )


def _enemies(state: State, name: str) -> Tuple[State, tf.Tensor, tf.Tensor]:
    """MinAtar's loop over fish or enemy submarines: touching the player
    ends the episode; every ``move_speed + 1`` frames an enemy moves (off
    the grid it vanishes, onto the player it ends the episode, onto a
    friendly bullet both vanish, +1); a submarine also fires every 11
    frames (appended to the enemy bullets, which move later this frame)."""
    items, bullets = _get(state, name), _get(state, 'fb')
    x0, y0 = state['sub_x'][:, None], state['sub_y'][:, None]
    alive, x, y, timer = items['alive'], items['x'], items['y'], items['timer']
    on_player = tf.logical_and(tf.equal(x, x0), tf.equal(y, y0))
    terminal = tf.logical_and(alive, on_player)
    move = tf.logical_and(alive, tf.equal(timer, 0))
    items['timer'] = tf.where(
        move, state['move_speed'][:, None], tf.where(alive, timer - 1, timer)
    )
    moved, out = _step_x(x, items['lr'])
    x = items['x'] = tf.where(move, moved, x)
    inside = tf.logical_and(move, tf.logical_not(out))
    touch = tf.logical_and(
        inside, tf.logical_and(tf.equal(x, x0), tf.equal(y, y0))
    )
    take = _claims(
        tf.logical_and(inside, tf.logical_not(touch)), x, y, bullets
    )
    shot = tf.reduce_any(take, axis=2)
    bullets['alive'] = tf.logical_and(
        bullets['alive'], tf.logical_not(tf.reduce_any(take, axis=1))
    )
    left = tf.logical_and(move, out)
    items['alive'] = tf.logical_and(
        alive, tf.logical_not(tf.logical_or(left, shot))
    )
    state = _put(_put(state, 'fb', bullets), name, items)
    if name == 'subs':
        state = _fire(state, alive, left)
    return (
        state,
        tf.reduce_sum(tf.cast(shot, tf.float32), axis=1),
        tf.reduce_any(tf.logical_or(terminal, touch), axis=1),
    )


def _fire(state: State, alive: tf.Tensor, left: tf.Tensor) -> State:
    """Enemy submarines alive at the start of their turn ([B, N]) whose
    shot timer is 0 fire from where they are now (a bullet from off the
    grid, ``left``, would vanish this frame: skipped)."""
    subs = _get(state, 'subs')
    fire = tf.logical_and(alive, tf.equal(subs['shot'], 0))
    subs['shot'] = tf.where(
        fire,
        _ENEMY_SHOT_INTERVAL,
        tf.where(alive, subs['shot'] - 1, subs['shot']),
    )
    old = _get(state, 'eb')
    # Appended in the loop's order: last slot first.
    new = dict(
        x=subs['x'],
        y=subs['y'],
        lr=subs['lr'],
        alive=tf.logical_and(fire, tf.logical_not(left)),
    )
    both = {
        k: tf.concat([old[k], tf.reverse(new[k], [1])], axis=1) for k in old
    }
    state = _put(state, 'subs', subs)
    return _put(state, 'eb', _compact(both, _LISTS['eb'][0]))


def _enemy_bullets(state: State) -> Tuple[State, tf.Tensor]:
    """Enemy bullets: on the player ends the episode; each moves (off the
    grid it vanishes; onto the player it ends the episode)."""
    bullets = _get(state, 'eb')
    x0, y0 = state['sub_x'], state['sub_y']
    terminal = tf.reduce_any(_at(bullets, x0, y0), axis=1)
    x, out = _step_x(bullets['x'], bullets['lr'])
    bullets = dict(
        bullets,
        x=tf.where(bullets['alive'], x, bullets['x']),
        alive=tf.logical_and(bullets['alive'], tf.logical_not(out)),
    )
    terminal |= tf.reduce_any(_at(bullets, x0, y0), axis=1)
    return _put(state, 'eb', bullets), terminal


def _decrement(x: tf.Tensor) -> tf.Tensor:
    """``x -= x > 0``."""
    return x - tf.cast(x > 0, tf.int32)


def _oxygen(state: State, ramping: bool) -> Tuple[State, tf.Tensor, tf.Tensor]:
    """Timers, oxygen and surfacing (MinAtar's ``_surface``, ramp included):
    returns the state, reward [B] and terminal [B]."""
    state = dict(state)
    for k in ('e_spawn_timer', 'd_spawn_timer', 'shot_timer'):
        state[k] = _decrement(state[k])
    oxygen, count = state['oxygen'], state['diver_count']
    terminal = oxygen <= 0
    below = state['sub_y'] > 0
    arrive = tf.logical_and(
        tf.logical_not(below), tf.logical_not(state['surface'])
    )
    terminal |= tf.logical_and(arrive, tf.equal(count, 0))
    refill = tf.logical_and(arrive, tf.not_equal(count, 0))
    full = tf.logical_and(refill, tf.equal(count, 6))
    reward = tf.cast(tf.where(full, oxygen * 10 // _MAX_OXYGEN, 0), tf.float32)
    state['diver_count'] = tf.where(
        refill, tf.where(full, 0, count) - 1, count
    )
    state['oxygen'] = tf.where(
        below, oxygen - 1, tf.where(refill, _MAX_OXYGEN, oxygen)
    )
    state['surface'] = tf.where(
        below, False, tf.logical_or(state['surface'], refill)
    )
    spawn, move, index = (
        state['e_spawn_speed'],
        state['move_speed'],
        state['ramp_index'],
    )
    ramp = tf.logical_and(refill, tf.logical_or(spawn > 1, move > 2))
    if not ramping:
        ramp = tf.zeros_like(ramp)
    slower = tf.logical_and(
        ramp, tf.logical_and(move > 2, tf.equal(index % 2, 1))
    )
    state['move_speed'] = move - tf.cast(slower, tf.int32)
    state['e_spawn_speed'] = spawn - tf.cast(
        tf.logical_and(ramp, spawn > 1), tf.int32
    )
    state['ramp_index'] = index + tf.cast(ramp, tf.int32)
    return state, reward, terminal


def _trails(items: Items) -> tf.Tensor:
    """[B, 100] bool: the cells behind the live items (on the grid)."""
    back = items['x'] - tf.where(items['lr'], 1, -1)
    valid = tf.logical_and(
        items['alive'], tf.logical_and(back >= 0, back <= 9)
    )
    return paint(items['y'], back, valid)


class Seaquest(MinAtarGame):
    """MinAtar's Seaquest (5 draws per step: enemy spawn, diver spawn).

    State: ``sub_x, sub_y, oxygen, diver_count, e_spawn_speed,
    e_spawn_timer, d_spawn_timer, move_speed, ramp_index, shot_timer`` [B]
    int32, ``sub_or`` (facing right), ``surface`` [B] bool; per list
    (``fb``, ``eb``, ``fish``, ``subs``, ``divers``) ``<list>_x, _y`` [B, N]
    int32, ``_alive, _lr`` [B, N] bool and its timers [B, N] int32.
    """

    name = 'seaquest'
    channels = (
        'sub_front',
        'sub_back',
        'friendly_bullet',
        'trail',
        'enemy_bullet',
        'enemy_fish',
        'enemy_sub',
        'oxygen_guage',
        'diver_guage',
        'diver',
    )
    minimal_actions = (0, LEFT, UP, RIGHT, DOWN, FIRE)
    num_step_draws = 5
    num_reset_draws = 0

    def initial_state(self, draws: tf.Tensor) -> State:
        """The submarine at (5, 0) facing left, full oxygen, no items."""
        b = tf.shape(draws)[0]
        zeros = tf.zeros([b], tf.int32)
        state = dict(
            sub_x=zeros + 5,
            sub_y=zeros,
            sub_or=tf.zeros([b], tf.bool),
            oxygen=zeros + _MAX_OXYGEN,
            diver_count=zeros,
            e_spawn_speed=zeros + _SPAWN_SPEED,
            e_spawn_timer=zeros + _SPAWN_SPEED,
            d_spawn_timer=zeros + _DIVER_SPAWN_SPEED,
            move_speed=zeros + _MOVE_INTERVAL,
            ramp_index=zeros,
            shot_timer=zeros,
            surface=tf.ones([b], tf.bool),
        )
        for name, (capacity, fields) in _LISTS.items():
            for k in ('x', 'y', 'alive') + fields:
                dtype = tf.bool if k in ('alive', 'lr') else tf.int32
                state['%s_%s' % (name, k)] = tf.zeros([b, capacity], dtype)
        return state

    def step(
        self, state: State, action: tf.Tensor, draws: tf.Tensor
    ) -> Tuple[State, tf.Tensor, tf.Tensor]:
        """One frame in MinAtar's order: spawns, player, friendly bullets,
        divers, enemy submarines, enemy bullets, fish, oxygen."""
        state = _player(_spawn(state, draws), action)
        state, reward = _shoot_enemies(state)
        state = _rescue(state)
        state, r_subs, t_subs = _enemies(state, 'subs')
        state, t_bullets = _enemy_bullets(state)
        state, r_fish, t_fish = _enemies(state, 'fish')
        state, r_air, t_air = _oxygen(state, self.ramping)
        for name, (capacity, _) in _LISTS.items():
            state = _put(state, name, _compact(_get(state, name), capacity))
        terminal = tf.logical_or(
            tf.logical_or(t_subs, t_bullets), tf.logical_or(t_fish, t_air)
        )
        return state, reward + r_subs + r_fish + r_air, terminal

    def observation(self, state: State) -> tf.Tensor:
        """[B, 10, 10, 10] bool, MinAtar's channels in order."""
        x, y = state['sub_x'], state['sub_y']
        back = tf.where(state['sub_or'], x - 1, x + 1)
        col = tf.range(100) % 10
        bottom = tf.range(100) >= 90
        oxygen = tf.maximum(state['oxygen'], 0) * 10 // _MAX_OXYGEN
        count = state['diver_count']
        lists = {n: _get(state, n) for n in _LISTS}
        trail = tf.logical_or(
            _trails(lists['fish']),
            tf.logical_or(_trails(lists['subs']), _trails(lists['divers'])),
        )

        def items(name: str) -> tf.Tensor:
            return paint(
                lists[name]['y'], lists[name]['x'], lists[name]['alive']
            )

        return stack_channels(
            [
                cells(y, x),
                cells(y, back),
                items('fb'),
                trail,
                items('eb'),
                items('fish'),
                items('subs'),
                tf.logical_and(bottom, col[None] < oxygen[:, None]),
                tf.logical_and(
                    bottom,
                    tf.logical_and(
                        col[None] >= 9 - count[:, None], col[None] < 9
                    ),
                ),
                items('divers'),
            ]
        )

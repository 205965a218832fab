"""The one topological sort of the package (pipeline graphs and spec files).

Iterative, so a chain of thousands of models sorts without touching Python's
recursion limit.  Dependencies come first; ties keep the listed order (a
depth-first post-order from each node in turn, dependencies in their order).
"""

from __future__ import annotations


class CycleError(ValueError):
    """The graph has a cycle; ``cycle`` lists its node indices, first one repeated at the end."""

    def __init__(self, cycle: list[int]):
        super().__init__(f"cycle through nodes {cycle}")
        self.cycle = cycle


def topological_order(deps: list[list[int]]) -> list[int]:
    """Order the nodes ``0..len(deps)-1`` so that each comes after ``deps[i]``.

    Raises :class:`CycleError` naming the first cycle found.
    """
    state = [0] * len(deps)        # 0 new, 1 on the current path, 2 placed
    order: list[int] = []
    for root in range(len(deps)):
        if state[root]:
            continue
        state[root] = 1
        path = [root]              # the current path, with the next dependency to visit
        next_dep = [0]
        while path:
            node = path[-1]
            k = next_dep[-1]
            if k < len(deps[node]):
                next_dep[-1] = k + 1
                dep = deps[node][k]
                if state[dep] == 1:
                    raise CycleError(path[path.index(dep):] + [dep])
                if state[dep] == 0:
                    state[dep] = 1
                    path.append(dep)
                    next_dep.append(0)
            else:
                path.pop()
                next_dep.pop()
                state[node] = 2
                order.append(node)
    return order

"""Draft trees as parent lists, against trees drawn by hand.

The tree used throughout (P = the pending token, letters = draft nodes, index in brackets):

        P
       / \\
     a[0] b[1]
     /  \\    \\
   c[2] d[3]  e[4]
    |
   f[5]
"""
import pytest

from paradec.core import tree

PARENTS = [-1, -1, 0, 0, 1, 2]


def test_depths():
    assert tree.depths(PARENTS) == [1, 1, 2, 2, 2, 3]
    assert tree.depths([]) == []
    assert tree.depths([-1, 0, 1, 2]) == [1, 2, 3, 4]


@pytest.mark.parametrize("parents", [[0], [-1, 1], [-1, 2, -1]])
def test_depths_rejects_a_parent_after_its_child(parents):
    with pytest.raises(ValueError, match="parents must come before"):
        tree.depths(parents)


def test_children_in_draft_order():
    assert tree.children(PARENTS) == {-1: [0, 1], 0: [2, 3], 1: [4], 2: [5], 3: [], 4: [], 5: []}
    assert tree.children([]) == {-1: []}


def test_ancestors_and_paths():
    assert tree.ancestors(PARENTS, 5) == [0, 2, 5]
    assert tree.ancestors(PARENTS, 4) == [1, 4]
    assert tree.ancestors(PARENTS, 1) == [1]
    assert tree.is_path(PARENTS, [0, 2, 5])
    assert tree.is_path(PARENTS, [1, 4])
    assert tree.is_path(PARENTS, [])
    assert not tree.is_path(PARENTS, [2, 5])  # does not start at the root
    assert not tree.is_path(PARENTS, [0, 4])  # 4 hangs off b, not a


def test_is_chain():
    assert tree.is_chain([])
    assert tree.is_chain([-1])
    assert tree.is_chain([-1, 0, 1, 2])
    assert not tree.is_chain(PARENTS)
    assert not tree.is_chain([-1, -1])
    assert not tree.is_chain([-1, 0, 0])


def test_mask_rows_hand_drawn():
    X, _ = True, False
    expected = [
        # P  a  b  c  d  e  f      row sees the pending token and its own ancestors
        [X, _, _, _, _, _, _],  # P
        [X, X, _, _, _, _, _],  # a
        [X, _, X, _, _, _, _],  # b
        [X, X, _, X, _, _, _],  # c
        [X, X, _, _, X, _, _],  # d
        [X, _, X, _, _, X, _],  # e
        [X, X, _, X, _, _, X],  # f
    ]
    assert tree.mask_rows(PARENTS) == expected


def test_mask_rows_of_a_chain_is_causal():
    rows = tree.mask_rows([-1, 0, 1])
    assert rows == [[j <= i for j in range(4)] for i in range(4)]
    assert tree.mask_rows([]) == [[True]]


def test_graft_follows_the_tree_then_branches_off():
    # the tree: 5 -> 7, and 6; the chain 5 7 9 follows 5 and 7, then hangs 9 under 7
    assert tree.graft([5, 6, 7], [-1, -1, 0], [5, 7, 9]) == ([5, 6, 7, 9], [-1, -1, 0, 2], [0, 2, 3])
    # a chain the tree never meets is a new branch off the pending token, after the tree's nodes
    assert tree.graft([5, 6, 7], [-1, -1, 0], [8, 9]) == ([5, 6, 7, 8, 9], [-1, -1, 0, -1, 3], [3, 4])
    # inside the tree: nothing added; an empty tree: the chain itself
    assert tree.graft([5, 6, 7], [-1, -1, 0], [6]) == ([5, 6, 7], [-1, -1, 0], [1])
    assert tree.graft([], [], [1, 2]) == ([1, 2], [-1, 0], [0, 1])


def test_graft_never_follows_the_tree_again_once_off_it():
    # 5 -> 9 exists under node 0, but once the chain left the tree at 8 its 9 is new, under 8
    tokens, parents, path = tree.graft([5, 9], [-1, 0], [8, 9])
    assert (tokens, parents, path) == ([5, 9, 8, 9], [-1, 0, -1, 2], [2, 3])
    assert tree.is_path(parents, path)
